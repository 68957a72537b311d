package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engine's replica application entry points, without replication around them. */
class ApplyReplicatedTest {
  @TempDir Path directory;

  private Troupe open() {
    return Troupe.open(RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
            "troupe.data-directory", directory.toString(), "troupe.dc.name", "here",
            "troupe.dc.peers", List.of("there")))
        .withFallback(ConfigFactory.load())));
  }

  @Test
  void aRemoteTransactionIsAppliedOnceWhateverItsRetriesAndLastWriterWinsOnItsStamp() {
    int there = DataCentreIds.of("there");
    try (Troupe troupe = open()) {
      troupe.defineType(SpecParser.parse("Counter",
          "{\"keys\": {\"n\": {\"kind\": \"counter\"}, \"r\": {\"kind\": \"register\"}}}"
              .getBytes(StandardCharsets.UTF_8), false)).join();
      EntityId a = new EntityId("Counter", "a");
      EntityId b = new EntityId("Counter", "b");
      Turn.ApplyReplicated single = new Turn.ApplyReplicated(there, 1000, 1000, List.of(
          new Operation.Increment("n", 5)));
      troupe.applyReplicated(a, single).join();
      troupe.applyReplicated(a, single).join();
      assertEquals(5, troupe.get(a).join().state().get("n").asLong());

      Map<EntityId, Turn.ApplyReplicated> parts = new LinkedHashMap<>();
      parts.put(a, new Turn.ApplyReplicated(there, 2000, 2001,
          List.of(new Operation.Increment("n", 1), new Operation.Assign("r", TextNode.valueOf("x")))));
      parts.put(b, new Turn.ApplyReplicated(there, 2000, 2002,
          List.of(new Operation.Increment("n", 1))));
      troupe.applyReplicated(parts).join();
      troupe.applyReplicated(parts).join();
      assertEquals(6, troupe.get(a).join().state().get("n").asLong());
      assertEquals(1, troupe.get(b).join().state().get("n").asLong());
      assertEquals("x", troupe.get(a).join().state().get("r").asText());

      // A local write now is newer than the remote stamp 2001 (a timestamp of 1970): it wins.
      troupe.assign(a, "r", TextNode.valueOf("local")).join();
      troupe.applyReplicated(a, new Turn.ApplyReplicated(there, 3000, 3000,
          List.of(new Operation.Assign("r", TextNode.valueOf("old"))))).join();
      assertEquals("local", troupe.get(a).join().state().get("r").asText());
    }
  }

  @Test
  void aRemoteTransactionLargerThanThisNodesTransactionBoundsIsApplied() {
    // The origin may commit more participants (its dependencies' followers) than a client's
    // transaction may name here (max-participants, 64 by default): refusing it would refuse it
    // at every retry and stop the origin's replication.
    int there = DataCentreIds.of("there");
    try (Troupe troupe = open()) {
      Map<EntityId, Turn.ApplyReplicated> parts = new LinkedHashMap<>();
      for (int i = 0; i < 100; i++) {
        parts.put(new EntityId("Item", "i" + i), new Turn.ApplyReplicated(there, 5000, 5001 + i,
            List.of(new Operation.Assign("r", TextNode.valueOf("v" + i)))));
      }
      troupe.applyReplicated(parts).join();
      assertEquals("v99", troupe.get(new EntityId("Item", "i99")).join().state().get("r")
          .asText());
    }
  }
}
