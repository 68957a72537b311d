package dev.troupe.model.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The dependency's stored JSON written and read without a Jackson tree ({@link
 * StoredDependencyJson}) is the tree's path exactly: the same bytes, the same dependency, the same
 * id, the same refusals, on arbitrary names (plain, escaped, non-ASCII).
 */
class StoredDependencyJsonTest {
  private static final String ALPHABET = "abcXYZ019-_.~[]/ \"\\\u00e9\u4e2d\t{}:,";

  @Test
  void writesAndReadsWhatTheTreeDoesOnArbitraryNames() {
    Random random = new Random(20);
    int plain = 0;
    for (int i = 0; i < 2_000; i++) {
      Dependency dependency;
      try {
        dependency = arbitrary(random, i % 3 == 0);
      } catch (TroupeException invalid) {
        continue; // a name EntityId or Dependency refuses
      }
      byte[] tree = Json.writeBytes(dependency.toJson());
      byte[] direct = StoredDependencyJson.write(dependency);
      assertArrayEquals(tree, direct, () -> new String(tree, StandardCharsets.UTF_8));
      Dependency read = StoredDependencyJson.read(direct, Json::parse);
      assertEquals(dependency, read);
      assertEquals(jacksonId(dependency), read.id(), "the id is Jackson's text, base64");
      if (StoredDependencyJson.readPlain(direct) != null) {
        plain++;
      }
    }
    assertEquals(true, plain > 300, "the plain path was taken " + plain + " times");
  }

  @Test
  void aMarketplaceReplicaTakesThePlainPath() {
    Dependency replica = new Dependency(DependencyKind.UPDATE,
        new KeyReference(new EntityId("Product", "s1-p2-g0"), "price"),
        new KeyReference(new EntityId("Cart", "c7"), "item[s1-p2-g0]"),
        new DependencyFunction.Replicate());
    byte[] bytes = StoredDependencyJson.write(replica);
    assertArrayEquals(Json.writeBytes(replica.toJson()), bytes);
    assertEquals(replica, StoredDependencyJson.readPlain(bytes));
    assertEquals(jacksonId(replica), replica.id());
  }

  @Test
  void anythingElseGoesTheTreesWayWithItsAnswers() {
    // Another field order, an extra field, spaces: the tree reads them as before.
    String reordered = "{\"kind\":\"delete\",\"follower\":{\"entity\":\"Stock/p\",\"key\":\"n\"},"
        + "\"leader\":{\"key\":\"price\",\"entity\":\"Product/p\"},\"extra\":1}";
    assertNull(StoredDependencyJson.readPlain(reordered.getBytes(StandardCharsets.UTF_8)));
    assertEquals(Dependency.fromJson(Json.parse(reordered)), StoredDependencyJson.read(
        reordered.getBytes(StandardCharsets.UTF_8), Json::parse));
    // Refusals come from Dependency.fromJson, whatever path the text would take.
    for (String refused : new String[] {
        "{\"id\":\"x\",\"kind\":\"sideways\",\"leader\":{\"entity\":\"A/a\",\"key\":\"k\"},"
            + "\"follower\":{\"entity\":\"B/b\",\"key\":\"k\"}}",
        "{\"id\":\"x\",\"kind\":\"update\",\"leader\":{\"entity\":\"A/a\",\"key\":\"\"},"
            + "\"follower\":{\"entity\":\"B/b\",\"key\":\"k\"},\"function\":\"replicate\"}",
        "{\"id\":\"x\",\"kind\":\"update\",\"leader\":{\"entity\":\"Aa\",\"key\":\"k\"},"
            + "\"follower\":{\"entity\":\"B/b\",\"key\":\"k\"},\"function\":\"replicate\"}",
        "{\"id\":\"x\",\"kind\":\"update\",\"leader\":{\"entity\":\"A/a\",\"key\":\"k\"},"
            + "\"follower\":{\"entity\":\"B/b\",\"key\":\"k\"},\"function\":\"nonsense\"}",
        "{\"id\":\"x\",\"kind\":\"update\",\"leader\":{\"entity\":\"A/a\",\"key\":\"k\"},"
            + "\"follower\":{\"entity\":\"A/a\",\"key\":\"k\"},\"function\":\"replicate\"}",
        "{\"id\":\"x\",\"kind\":\"delete\",\"leader\":{\"entity\":\"A/a\",\"key\":\"k\"},"
            + "\"follower\":{\"entity\":\"B/b\",\"key\":\"k\"},\"function\":\"replicate\"}"}) {
      byte[] bytes = refused.getBytes(StandardCharsets.UTF_8);
      assertNull(StoredDependencyJson.readPlain(bytes), refused);
      TroupeException expected = assertThrows(TroupeException.class,
          () -> Dependency.fromJson(Json.parse(refused)));
      TroupeException actual = assertThrows(TroupeException.class,
          () -> StoredDependencyJson.read(bytes, Json::parse));
      assertEquals(expected.getMessage(), actual.getMessage());
    }
    assertNotNull(StoredDependencyJson.readPlain(StoredDependencyJson.write(new Dependency(
        DependencyKind.DELETE, new KeyReference(new EntityId("A", "a"), "k"),
        new KeyReference(new EntityId("B", "b"), "k"), null))));
  }

  private static Dependency arbitrary(Random random, boolean plainOnly) {
    boolean update = random.nextBoolean();
    DependencyFunction function = !update ? null : switch (random.nextInt(4)) {
      case 0 -> new DependencyFunction.Replicate();
      case 1 -> new DependencyFunction.Sum();
      case 2 -> new DependencyFunction.Count();
      default -> new DependencyFunction.Max(); // cel: functions compile (slow), same text path
    };
    return new Dependency(update ? DependencyKind.UPDATE : DependencyKind.DELETE,
        new KeyReference(new EntityId(name(random, plainOnly), name(random, plainOnly)),
            name(random, plainOnly)),
        new KeyReference(new EntityId(name(random, plainOnly), name(random, plainOnly)),
            name(random, plainOnly)), function);
  }

  private static String name(Random random, boolean plainOnly) {
    int length = 1 + random.nextInt(8);
    StringBuilder name = new StringBuilder(length);
    for (int i = 0; i < length; i++) {
      char c = ALPHABET.charAt(random.nextInt(plainOnly ? 15 : ALPHABET.length()));
      name.append(c == '/' && plainOnly ? 'q' : c);
    }
    return name.toString();
  }

  private static String jacksonId(Dependency dependency) {
    ArrayNode parts = Json.NODES.arrayNode();
    parts.add(dependency.kind().wireName()).add(dependency.leader().entity().type())
        .add(dependency.leader().entity().id()).add(dependency.leader().key())
        .add(dependency.follower().entity().type()).add(dependency.follower().entity().id())
        .add(dependency.follower().key());
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString(Json.write(parts).getBytes(StandardCharsets.UTF_8));
  }
}
