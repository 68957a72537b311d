package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireMessage;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A prepared part recovery kept in doubt (its coordinator on another node: {@code
 * InDoubtResolution.toAsk}) is adopted by its entity, holds it, and asks the coordinator's node
 * through the transport until answered; the answer commits or abandons the recorded operations.
 * And a node answers a question about a transaction none of its live coordinators knows from the
 * decision records in its store. The situations are made through the store API on one node.
 */
class RecoveredPartInDoubtTest {
  private static final int OTHER_NODE = 5;

  @TempDir Path directory;

  private Troupe open() {
    return Troupe.open(RuntimeSettings.fromConfig(ConfigFactory.parseString("""
            troupe.transport.encode-local-messages = true
            troupe.transactions.in-doubt-query-interval-millis = 20
            """)
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory", directory.toString())))
        .withFallback(ConfigFactory.load())));
  }

  /** Prepares a part of {@code transactionId} on {@code entity} (x := value) in the store. */
  private static PreparedTransaction prepare(Troupe troupe, long transactionId, EntityId entity,
      int value) {
    PreparedTransaction part = new PreparedTransaction(transactionId, entity,
        List.of(new Operation.Assign("x", Json.parse(String.valueOf(value)))), null, 0);
    troupe.store().prepare(part).join();
    return part;
  }

  private static InDoubtResolution inDoubt(List<PreparedTransaction> parts) {
    return new InDoubtResolution(List.of(), List.of(), List.of(), parts, List.of());
  }

  private static JsonNode x(Troupe troupe, EntityId entity) {
    try {
      return troupe.getKey(entity, "x").join();
    } catch (java.util.concurrent.CompletionException absent) {
      return null;
    }
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting: " + what);
      Thread.sleep(10);
    }
  }

  @Test
  void aRecoveredPartHoldsItsEntityAndAsksTheCoordinatorsNodeUntilAnswered() throws Exception {
    try (Troupe troupe = open()) {
      EntityId committed = EntityId.parse("Box/committed");
      EntityId aborted = EntityId.parse("Box/aborted");
      long first = TransactionIds.atOrAbove(troupe.currentTimestamp() + 1, OTHER_NODE);
      long second = TransactionIds.atOrAbove(first + 1, OTHER_NODE);
      assertEquals(OTHER_NODE, TransactionIds.nodeOf(first));
      troupe.adoptRecovered(inDoubt(List.of(prepare(troupe, first, committed, 7),
          prepare(troupe, second, aborted, 9))));

      // Both ask node 5 (this node has no transport to it: dropped and counted), again and again.
      LocalTransport transport = troupe.transport();
      await(() -> transport.droppedForOtherNodes() >= 6, "repeated questions to node 5");
      // The part holds its entity: a turn on it waits for the decision.
      CompletableFuture<TurnOutcome> waiting =
          troupe.assign(committed, "y", Json.parse("1"));
      Thread.sleep(100);
      assertFalse(waiting.isDone(), "the part in doubt holds the entity");
      assertNull(x(troupe, committed), "a prepared part is invisible to reads");

      // Node 5's answers, as its NodeInbox sends them back to the participants.
      transport.send(new Envelope(OTHER_NODE, new Envelope.Destination.ToEntity(committed),
          new WireMessage.DecisionAnswer(first, committed, WireMessage.DecisionState.COMMITTED)));
      transport.send(new Envelope(OTHER_NODE, new Envelope.Destination.ToEntity(aborted),
          new WireMessage.DecisionAnswer(second, aborted, WireMessage.DecisionState.ABORTED)));
      waiting.join();
      assertEquals(7, x(troupe, committed).asInt(), "the commit applied the recorded operations");
      troupe.assign(aborted, "y", Json.parse("1")).get(10, TimeUnit.SECONDS); // released
      assertNull(x(troupe, aborted), "the abort dropped the recorded operations");
      long asked = transport.droppedForOtherNodes();
      Thread.sleep(150);
      assertEquals(asked, transport.droppedForOtherNodes(), "answered parts ask no more");
    }
  }

  @Test
  void aQuestionNoLiveCoordinatorKnowsIsAnsweredFromTheStoresDecisionRecords() throws Exception {
    try (Troupe troupe = open()) {
      // Coordinated by this node, but by no live coordinator (as after a restart, or a record
      // written by another node's coordinator in a shared store): the record alone says commit.
      EntityId recorded = EntityId.parse("Box/recorded");
      EntityId presumed = EntityId.parse("Box/presumed");
      int here = troupe.transport().localNode();
      long withRecord = TransactionIds.atOrAbove(troupe.currentTimestamp() + 1, here);
      long withoutRecord = TransactionIds.atOrAbove(withRecord + 1, here);
      troupe.store().persistDecision(new DecidedTransaction(withRecord, List.of(recorded))).join();
      assertTrue(troupe.store().decisionRecorded(withRecord));
      assertFalse(troupe.store().decisionRecorded(withoutRecord));
      troupe.adoptRecovered(inDoubt(List.of(prepare(troupe, withRecord, recorded, 3),
          prepare(troupe, withoutRecord, presumed, 4))));

      await(() -> x(troupe, recorded) != null, "the recorded commit applied");
      assertEquals(3, x(troupe, recorded).asInt());
      troupe.assign(presumed, "y", Json.parse("1")).get(10, TimeUnit.SECONDS); // released
      assertNull(x(troupe, presumed), "no record and no coordinator: presumed abort");
      assertEquals(0, troupe.transport().droppedForOtherNodes());
    }
  }
}
