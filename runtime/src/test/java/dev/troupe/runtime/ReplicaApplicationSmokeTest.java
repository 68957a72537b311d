package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A remote transaction's part applied through the embedded API over real RocksDB and Pekko: once,
 * idempotently across a restart, its register write merged by its origin stamp, the marker never
 * shown. The replication shell's own tests cover the rest of the path.
 */
class ReplicaApplicationSmokeTest {
  private static final int ORIGIN_DC = 7;
  private static final EntityId ITEM = new EntityId("Item", "i1");

  @TempDir Path directory;

  private Troupe open() {
    return Troupe.open(RuntimeSettings.fromConfig(ConfigFactory.parseMap(
            Map.of("troupe.data-directory", directory.toString()))
        .withFallback(ConfigFactory.load())));
  }

  private static Turn.ApplyReplicated part(long timestamp, Operation... operations) {
    return new Turn.ApplyReplicated(ORIGIN_DC, timestamp, timestamp, List.of(operations));
  }

  @Test
  void aRemotePartIsAppliedOnceAndItsStampDecides() {
    long localVersion;
    try (Troupe troupe = open()) {
      troupe.defineType(SpecParser.parse("Item", ("{\"keys\": {\"name\": {\"kind\": \"register\"},"
          + " \"n\": {\"kind\": \"counter\"}}}").getBytes(StandardCharsets.UTF_8), false)).join();
      TurnOutcome applied = troupe.turn(ITEM, part(100,
          new Operation.Assign("name", Json.parse("\"remote\"")),
          new Operation.Increment("n", 2))).join();
      assertTrue(applied.changed());
      TurnOutcome again = troupe.turn(ITEM, part(100,
          new Operation.Increment("n", 2))).join();
      assertFalse(again.changed(), "already applied");
      assertEquals(applied.version(), again.version());
      localVersion = troupe.assign(ITEM, "name", TextNode.valueOf("local")).join().version();
      // Written at the origin before the local write's timestamp: the local value stays.
      troupe.turn(ITEM, part(localVersion - 1,
          new Operation.Assign("name", Json.parse("\"older\"")))).join();
      EntityView view = troupe.get(ITEM).join();
      assertEquals(Json.parse("{\"name\": \"local\", \"n\": 2}"), view.state());
    }
    try (Troupe troupe = open()) {
      // The journal materializes the same state, and the marker still stops a re-application.
      assertEquals(Json.parse("{\"name\": \"local\", \"n\": 2}"), troupe.get(ITEM).join().state());
      assertFalse(troupe.turn(ITEM, part(localVersion - 1,
          new Operation.Increment("n", 5))).join().changed());
      troupe.turn(ITEM, part(Long.MAX_VALUE / 2,
          new Operation.Assign("name", Json.parse("\"newer\"")))).join();
      assertEquals("newer", troupe.get(ITEM).join().state().get("name").asText());
    }
  }

  /** A multi-entity remote transaction: every part applied atomically, once, in either mode. */
  @Test
  void aMultiEntityRemoteTransactionAppliesEveryPartOnce() {
    EntityId first = new EntityId("Account", "a");
    EntityId second = new EntityId("Account", "b");
    try (Troupe troupe = open()) {
      troupe.defineType(SpecParser.parse("Account",
          "{\"keys\": {\"balance\": {\"kind\": \"counter\"}}}".getBytes(StandardCharsets.UTF_8),
          false)).join();
      for (TransactionRequest.Mode mode : List.of(TransactionRequest.Mode.DYNAMIC,
          TransactionRequest.Mode.PLANNED)) {
        long timestamp = mode == TransactionRequest.Mode.DYNAMIC ? 100 : 200;
        TransactionRequest transfer = new TransactionRequest(List.of(
            new TransactionRequest.Operation(first, new Turn.ApplyReplicated(ORIGIN_DC, timestamp,
                timestamp + 1, List.of(new Operation.Increment("balance", -5)))),
            new TransactionRequest.Operation(second, new Turn.ApplyReplicated(ORIGIN_DC,
                timestamp, timestamp + 2, List.of(new Operation.Increment("balance", 5))))),
            List.of(), mode);
        troupe.transact(transfer).join();
        troupe.transact(transfer).join(); // a re-application: nothing changes
      }
      assertEquals(-10, troupe.get(first).join().state().get("balance").asLong());
      assertEquals(10, troupe.get(second).join().state().get("balance").asLong());
    }
  }
}
