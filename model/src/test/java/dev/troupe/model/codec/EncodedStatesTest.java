package dev.troupe.model.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.value.RegisterValue;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link EncodedStates} works on a state's encoding as the decoded way would: a record applied in
 * place gives the very bytes {@link ValueEncoding#writeState} writes for the decoded state after
 * {@link EntityState#apply}, and a schemaless rendering the very bytes {@code Json.writeBytes} of
 * {@code CompiledType.render}; on random states and records of every shape (keys and values that
 * need escapes, DEL, other characters, numbers, containers, counters, tombstones, several data
 * centres, new keys, hidden keys), where anything not plain must answer null.
 */
class EncodedStatesTest {
  private static final CompiledType SCHEMALESS = CompiledType.schemaless("T");
  private static final List<String> KEYS = List.of("field0", "field1", "field2", "field3",
      "field4", "field5", "field6", "field7", "field8", "field9", "a\"b", "c\\d", "e\u007ff", "Z",
      "$hidden", "caf\u00e9", "x\ty", "");

  @Test
  void aYcsbRecordAppliesAndRendersInPlace() {
    EntityState state = EntityState.ABSENT;
    List<Operation> insert = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      insert.add(new Operation.Assign("field" + i, Json.NODES.textNode(ycsbValue(new Random(i)))));
    }
    state = state.apply(insert, 100, 0);
    byte[] encoded = encode(state);
    List<Operation> update = List.of(new Operation.Assign("field3",
        Json.NODES.textNode(ycsbValue(new Random(99)))));
    BinaryWriter out = new BinaryWriter(64);
    List<EncodedStates.Replaced> replaced =
        EncodedStates.applyAssigns(encoded, 0, encoded.length, update, 200, 0, out);
    assertNotNull(replaced, "a YCSB update applies in place");
    assertArrayEquals(encode(state.apply(update, 200, 0)), out.toByteArray());
    assertEquals(List.of(new EncodedStates.Replaced("field3",
        ((RegisterValue) state.get("field3")).value())), replaced);
    byte[] rendered = EncodedStates.renderSchemaless(encoded, 0, encoded.length);
    assertNotNull(rendered, "a YCSB record renders from its encoding");
    assertArrayEquals(Json.writeBytes(SCHEMALESS.render(state)), rendered);
  }

  @Test
  void randomStatesAndRecordsGiveTheDecodedWaysBytesOrNull() {
    Random random = new Random(2026);
    int appliedInPlace = 0;
    int renderedInPlace = 0;
    int cases = 1000;
    for (int c = 0; c < cases; c++) {
      EntityState state = randomState(random);
      byte[] encoded = encode(state);
      long timestamp = state.version() + 1 + random.nextInt(3);
      int originDc = random.nextInt(4);
      List<Operation> record = randomRecord(random, state);
      BinaryWriter out = new BinaryWriter(16);
      List<EncodedStates.Replaced> replaced =
          EncodedStates.applyAssigns(encoded, 0, encoded.length, record, timestamp, originDc, out);
      if (replaced != null) {
        appliedInPlace++;
        EntityState expected = state.apply(record, timestamp, originDc);
        assertArrayEquals(encode(expected), out.toByteArray(),
            () -> "in place: " + state + " after " + record);
        EntityState decoded = ValueEncoding.readState(new BinaryReader(encoded, 0,
            encoded.length, (position, message, cause) -> new IllegalStateException(message)));
        for (EncodedStates.Replaced each : replaced) {
          assertEquals(((RegisterValue) decoded.get(each.key())).value(), each.value());
        }
        assertEquals(record.stream().map(Operation::key).distinct().count(), replaced.size());
      }
      byte[] rendered = EncodedStates.renderSchemaless(encoded, 0, encoded.length);
      if (rendered != null) {
        renderedInPlace++;
        assertArrayEquals(Json.writeBytes(SCHEMALESS.render(state)), rendered,
            () -> "rendered: " + state);
      }
    }
    // Both ways are taken often, and not always.
    assertTrue(appliedInPlace > cases / 5 && appliedInPlace < cases, "applied " + appliedInPlace);
    assertTrue(renderedInPlace > cases / 5 && renderedInPlace < cases, "rendered " + renderedInPlace);
  }

  @Test
  void damagedOrForeignBytesAnswerNull() {
    EntityState state = EntityState.ABSENT.apply(
        List.of(new Operation.Assign("k", Json.NODES.textNode("v"))), 5, 0);
    byte[] encoded = encode(state);
    List<Operation> update = List.of(new Operation.Assign("k", Json.NODES.textNode("w")));
    for (int cut = 1; cut < encoded.length; cut++) {
      assertNull(EncodedStates.applyAssigns(encoded, 0, encoded.length - cut, update, 9, 0,
          new BinaryWriter(16)));
      assertNull(EncodedStates.renderSchemaless(encoded, 0, encoded.length - cut));
    }
    // A record at or before the version, or of another kind, is the decoded way's.
    assertNull(EncodedStates.applyAssigns(encoded, 0, encoded.length, update, 5, 0,
        new BinaryWriter(16)));
    assertNull(EncodedStates.applyAssigns(encoded, 0, encoded.length,
        List.of(new Operation.Increment("k", 1)), 9, 0, new BinaryWriter(16)));
    assertNull(EncodedStates.applyAssigns(encoded, 0, encoded.length,
        List.of(new Operation.Assign("new", Json.NODES.textNode("w"))), 9, 0,
        new BinaryWriter(16)));
  }

  private static byte[] encode(EntityState state) {
    BinaryWriter out = new BinaryWriter(64);
    ValueEncoding.writeState(out, state);
    return out.toByteArray();
  }

  /** YCSB's values: 100 characters from 0x20 to 0x7F. */
  private static String ycsbValue(Random random) {
    char[] chars = new char[100];
    for (int i = 0; i < chars.length; i++) {
      chars[i] = (char) (0x20 + random.nextInt(0x60));
    }
    return new String(chars);
  }

  /** A value of any kind; when {@code plain}, one the codec reads without Jackson. */
  private static JsonNode randomValue(Random random, boolean plain) {
    int[] plainKinds = {0, 1, 2, 3, 4, 8, 10, 11, 13};
    int kind = plain ? plainKinds[random.nextInt(plainKinds.length)] : random.nextInt(14);
    return switch (kind) {
      case 0, 1, 2, 3, 4 -> Json.NODES.textNode(ycsbValue(random).substring(random.nextInt(100)));
      case 5 -> Json.NODES.textNode("caf\u00e9 \u20ac");
      case 6 -> Json.NODES.textNode("line\nbreak");
      case 7 -> Json.NODES.numberNode(random.nextLong() >> random.nextInt(64));
      case 8 -> Json.NODES.numberNode(random.nextInt(1000) - 500);
      case 9 -> Json.NODES.numberNode(1.5 * random.nextInt(100));
      case 10 -> Json.NODES.booleanNode(random.nextBoolean());
      case 11 -> Json.NODES.nullNode();
      case 12 -> Json.parse("{\"a\":[1,\"b\"],\"c\":null}");
      default -> Json.NODES.textNode("");
    };
  }

  private static String randomKey(Random random, int pool) {
    return KEYS.get(random.nextInt(Math.min(pool, KEYS.size())));
  }

  /** A state written by a few records, mostly plain; some with counters, deletions, many DCs. */
  private static EntityState randomState(Random random) {
    EntityState state = EntityState.ABSENT;
    long timestamp = 1 + random.nextInt(5);
    int keyPool = random.nextInt(4) == 0 ? KEYS.size() : 10;
    int records = 1 + random.nextInt(3);
    boolean plain = random.nextBoolean();
    for (int r = 0; r < records; r++) {
      List<Operation> operations = new ArrayList<>();
      int count = 1 + random.nextInt(SmallPersistentMap.MAX_SIZE);
      for (int o = 0; o < count; o++) {
        String key = randomKey(random, keyPool);
        switch (random.nextInt(40)) {
          case 0 -> operations.add(new Operation.Increment("counter", 1 + random.nextInt(3)));
          case 1 -> operations.add(new Operation.DeleteKey(key));
          default -> operations.add(new Operation.Assign(key, randomValue(random, plain)));
        }
      }
      state = state.apply(operations, timestamp, random.nextInt(8) == 0 ? 1 + random.nextInt(3)
          : 0);
      timestamp += 1 + random.nextInt(5);
    }
    return state;
  }

  /** Mostly assignments of keys the state holds; sometimes new keys, other operations. */
  private static List<Operation> randomRecord(Random random, EntityState state) {
    List<String> held = new ArrayList<>();
    for (Map.Entry<String, ?> entry : state.values().entrySet()) {
      held.add(entry.getKey());
    }
    List<Operation> record = new ArrayList<>();
    int count = 1 + random.nextInt(3);
    for (int o = 0; o < count; o++) {
      int pick = random.nextInt(20);
      if (pick == 0 || held.isEmpty()) {
        record.add(new Operation.Assign(randomKey(random, KEYS.size()),
            randomValue(random, false)));
      } else if (pick == 1) {
        record.add(new Operation.Increment("counter", 2));
      } else if (pick == 2) {
        record.add(new Operation.DeleteKey(held.get(random.nextInt(held.size()))));
      } else {
        record.add(new Operation.Assign(held.get(random.nextInt(held.size())),
            randomValue(random, false)));
      }
    }
    return record;
  }
}
