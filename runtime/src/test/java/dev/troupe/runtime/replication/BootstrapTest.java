package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.causal.BootstrapImage;
import dev.troupe.model.causal.BootstrapImageCodec;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A DC added to a running set fills itself from another DC's bootstrap image and the logs' tails
 * (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"), with real engines in one JVM: writes
 * of both running DCs (single-entity and multi-entity, replicated between them) interleave with
 * the reading of the image, so entity states contain transactions past the start vector, which
 * the new DC must skip when it pulls them again (markers for b's, the installed marker for a's)
 * and apply when they are not contained. Counters then count every increment exactly once in
 * every DC, sets hold every addition, and the type declaration came with the image.
 */
class BootstrapTest {
  private static final long TIMEOUT_MILLIS = 60_000;
  private static final String SPEC = "{\"keys\": {\"n\": {\"kind\": \"counter\"},"
      + " \"r\": {\"kind\": \"register\"}, \"s\": {\"kind\": \"set\"}}}";
  private static final int ENTITIES = 12;

  @TempDir Path root;

  private final Map<EntityId, Long> expectedCounters = new HashMap<>();
  private final Map<EntityId, Set<String>> expectedSets = new HashMap<>();
  private final List<CompletableFuture<?>> writes = new ArrayList<>();
  private int additions;

  private static EntityId account(int i) {
    return new EntityId("Account", "x" + i);
  }

  /** A few writes at {@code dc}: increments, set additions, a two-entity transaction. */
  private void write(Troupe troupe, String dc, SplittableRandom random) {
    for (int k = 0; k < 3; k++) {
      EntityId entity = account(random.nextInt(ENTITIES));
      long amount = 1 + random.nextInt(100);
      expectedCounters.merge(entity, amount, Long::sum);
      writes.add(troupe.increment(entity, "n", amount));
      String element = dc + (additions++);
      expectedSets.computeIfAbsent(entity, e -> new HashSet<>()).add(element);
      writes.add(troupe.add(entity, "s", TextNode.valueOf(element)));
    }
    EntityId left = account(random.nextInt(ENTITIES));
    EntityId right = account((left.hashCode() & 0xFF) % ENTITIES == 0 ? 1 : 0);
    if (!left.equals(right)) {
      expectedCounters.merge(left, 1L, Long::sum);
      expectedCounters.merge(right, 1L, Long::sum);
      writes.add(troupe.transact(new TransactionRequest(List.of(
          new TransactionRequest.Operation(left, new Turn.IncrementKey("n", 1)),
          new TransactionRequest.Operation(right, new Turn.IncrementKey("n", 1))),
          List.of(), TransactionRequest.Mode.DYNAMIC)));
    }
  }

  private void settleWrites() {
    CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
    writes.clear();
  }

  private static JsonNode value(Troupe troupe, EntityId entity, String key) {
    return troupe.get(entity).join().state().get(key);
  }

  private static void wipe(Path directory) {
    try (Stream<Path> paths = Files.walk(directory)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * While an image is served (and its hold lasts), the serving DC keeps its log above the start
   * vector, its own entries and another origin's alike, though every configured DC received them;
   * released, the log is truncated as usual.
   */
  @Test
  void theServingDataCentreKeepsItsLogAboveTheStartVectorWhileTheImageIsHeld() throws Exception {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      for (String dc : List.of("a", "b")) {
        dcs.troupe(dc).defineType(SpecParser.parse("Account",
            SPEC.getBytes(StandardCharsets.UTF_8), false)).join();
      }
      SplittableRandom random = new SplittableRandom(3);
      for (int round = 0; round < 5; round++) {
        write(dcs.troupe("a"), "a", random);
        write(dcs.troupe("b"), "b", random);
        settleWrites();
      }
      int a = dcs.shell("a").dataCentreId();
      int b = dcs.shell("b").dataCentreId();
      DependencyVector before = dcs.shell("b").causalToken();
      dcs.pullUntil(() -> dcs.shell("a").appliedVector().coversExcept(before, a),
          TIMEOUT_MILLIS, "a applied b's writes");
      Thread.sleep(300); // a record of the applied vector
      dcs.pullAll();
      BootstrapSettings released = new BootstrapSettings(0, 3, 1 << 20, 10_000, 1 << 20);
      BootstrapImageReader reader = new BootstrapImageReader(dcs.troupe("a").store(),
          dcs.shell("a"), dev.troupe.model.causal.DataCentreIds.of("c"), released);
      DependencyVector start = reader.began().startVector();
      for (int round = 0; round < 10; round++) {
        write(dcs.troupe("a"), "a", random);
        write(dcs.troupe("b"), "b", random);
        settleWrites();
      }
      DependencyVector after = dcs.shell("b").causalToken();
      DependencyVector afterA = dcs.shell("a").causalToken();
      dcs.pullUntil(() -> dcs.shell("a").appliedVector().coversExcept(after, a)
              && dcs.shell("b").appliedVector().coversExcept(afterA, b),
          TIMEOUT_MILLIS, "both applied each other's writes");
      for (int i = 0; i < 20; i++) {
        dcs.pullAll(); // truncation would be due: both received everything
        Thread.sleep(25);
      }
      var log = dcs.troupe("a").store().replicationLog();
      int ownHeld = log.read(a, start.get(a), 10_000).entries().size();
      int otherHeld = log.read(b, start.get(b), 10_000).entries().size();
      assertTrue(ownHeld >= 30, "a's own entries above the start vector kept: " + ownHeld);
      assertTrue(otherHeld >= 30, "b's entries above the start vector kept: " + otherHeld);
      reader.close(); // released at once (hold-after-millis 0)
      dcs.pullUntil(() -> {
        try {
          return log.read(a, start.get(a), 10_000).entries().size() < ownHeld;
        } catch (dev.troupe.model.causal.ReplicationLogTruncatedException truncated) {
          return true; // truncated past the start vector: a read there is refused
        }
      }, TIMEOUT_MILLIS, "a's log truncated once the hold is gone");
    }
  }

  @Test
  void aDataCentreAddedLaterConvergesFromAnImageAndTheTails() throws Exception {
    SplittableRandom random = new SplittableRandom(17);
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b", "c")) {
      // c joins later: it is down and empty until its bootstrap (a and b know it as a peer that
      // never reported, so they keep their logs for it).
      dcs.restart("c", dc -> wipe(dc.directory));
      dcs.get("c").shell.close();
      dcs.get("c").troupe.close();
      for (String dc : List.of("a", "b")) {
        dcs.troupe(dc).defineType(SpecParser.parse("Account",
            SPEC.getBytes(StandardCharsets.UTF_8), false)).join();
      }
      for (int round = 0; round < 10; round++) {
        write(dcs.troupe("a"), "a", random);
        write(dcs.troupe("b"), "b", random);
        settleWrites();
        dcs.pull("a", "b");
        dcs.pull("b", "a");
      }

      // The image, read while both DCs keep writing and replicating between them.
      int cId = dev.troupe.model.causal.DataCentreIds.of("c");
      ByteArrayOutputStream image = new ByteArrayOutputStream();
      BootstrapSettings settings = new BootstrapSettings(60_000, 3, 1 << 20, 10_000, 1 << 20);
      try (BootstrapImageReader reader = new BootstrapImageReader(dcs.troupe("a").store(),
          dcs.shell("a"), cId, settings)) {
        for (byte[] frame = reader.next(); frame != null; frame = reader.next()) {
          image.write(frame);
          write(dcs.troupe("a"), "a", random);
          write(dcs.troupe("b"), "b", random);
          settleWrites();
          dcs.pull("a", "b");
          dcs.pull("b", "a");
        }
      }
      List<BootstrapImage> records = new ArrayList<>();
      ByteArrayInputStream in = new ByteArrayInputStream(image.toByteArray());
      for (BootstrapImage record = BootstrapImageCodec.read(in, 1 << 20); record != null;
          record = BootstrapImageCodec.read(in, 1 << 20)) {
        records.add(record);
      }
      BootstrapImage.Began began = (BootstrapImage.Began) records.get(0);
      BootstrapImage.Ended ended = (BootstrapImage.Ended) records.get(records.size() - 1);
      assertTrue(ended.endVector().coversExcept(began.startVector(), -1));
      assertTrue(records.stream().anyMatch(record -> record instanceof BootstrapImage.EntityImage
          entity && entity.entity().type().startsWith("$")), "the type declarations came");

      // c: a cut image (a crash mid-install), then the whole one over it.
      DataCentres.Dc c = dcs.get("c");
      byte[] bytes = image.toByteArray();
      dcs.restart("c", dc -> {
        try {
          assertThrows(IOException.class, () -> BootstrapInstaller.prepare(
              dc.settings.storage(), "a",
              () -> new ByteArrayInputStream(bytes, 0, bytes.length / 2), settings));
          BootstrapInstaller.Outcome outcome = BootstrapInstaller.prepare(dc.settings.storage(),
              "a", () -> new ByteArrayInputStream(bytes), settings);
          assertEquals(records.size() - 2, outcome.entities());
          // Installed from a: another source is refused, a again has nothing more to do.
          assertThrows(BootstrapInstaller.Refused.class, () -> BootstrapInstaller.prepare(
              dc.settings.storage(), "b", () -> new ByteArrayInputStream(new byte[0]),
              settings));
          assertFalse(BootstrapInstaller.prepare(dc.settings.storage(), "a",
              () -> new ByteArrayInputStream(new byte[0]), settings).installed());
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
      BootstrapGate gate = BootstrapGate.start(c.troupe.store(), c.shell);
      assertTrue(gate.bootstrapping(), "clients wait for the tails");
      assertTrue(c.troupe.type("Account").isPresent(), "the type came with the image");

      // Writes go on everywhere, c's too once it serves.
      for (int round = 0; round < 10; round++) {
        write(dcs.troupe("a"), "a", random);
        write(dcs.troupe("b"), "b", random);
        settleWrites();
        dcs.pullAll();
      }
      dcs.pullUntil(() -> !gate.bootstrapping(), TIMEOUT_MILLIS, "c applied the tails");
      for (int round = 0; round < 5; round++) {
        write(dcs.troupe("c"), "c", random);
        write(dcs.troupe("a"), "a", random);
        settleWrites();
        dcs.pullAll();
      }
      Map<String, DependencyVector> tokens = new HashMap<>();
      for (String dc : List.of("a", "b", "c")) {
        tokens.put(dc, dcs.shell(dc).causalToken());
      }
      dcs.pullUntil(() -> tokens.keySet().stream().allMatch(dc -> tokens.values().stream()
              .allMatch(token -> dcs.shell(dc).appliedVector().coversExcept(token,
                  dcs.shell(dc).dataCentreId()))),
          TIMEOUT_MILLIS, "every DC applied every other's writes");
      for (String dc : List.of("a", "b", "c")) {
        for (int i = 0; i < ENTITIES; i++) {
          EntityId entity = account(i);
          assertEquals(expectedCounters.getOrDefault(entity, 0L),
              value(dcs.troupe(dc), entity, "n").asLong(), dc + " " + entity);
          Set<String> elements = new HashSet<>();
          value(dcs.troupe(dc), entity, "s").forEach(e -> elements.add(e.asText()));
          assertEquals(expectedSets.getOrDefault(entity, Set.of()), elements, dc + " " + entity);
        }
      }
      assertFalse(gate.bootstrapping());
    }
  }
}
