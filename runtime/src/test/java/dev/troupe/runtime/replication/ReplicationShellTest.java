package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.TransactionOutcome;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.TurnOutcome;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replication between real engines (real RocksDB, real actors) in one JVM, connected by pulls the
 * test runs itself ({@link DataCentres}): convergence of every kind of value, atomic and causal
 * visibility, transitive forwarding around a cut link, a receiver's restart, causal tokens.
 */
class ReplicationShellTest {
  private static final long TIMEOUT_MILLIS = 30_000;
  private static final String SPEC = "{\"keys\": {\"n\": {\"kind\": \"counter\"},"
      + " \"r\": {\"kind\": \"register\"}, \"s\": {\"kind\": \"set\"}}}";

  @TempDir Path root;

  private DataCentres open(String... names) {
    return open(Map.of(), names);
  }

  private DataCentres open(Map<String, Object> overrides, String... names) {
    DataCentres dcs = new DataCentres(root, overrides, names);
    for (String name : names) {
      // Every DC declares the type itself (type definitions are not replicated into the
      // registry of a running engine).
      dcs.troupe(name).defineType(SpecParser.parse("Account",
          SPEC.getBytes(StandardCharsets.UTF_8), false)).join();
    }
    return dcs;
  }

  private static EntityId account(String id) {
    return new EntityId("Account", id);
  }

  /** A key's value, null when the entity or the key does not exist. */
  private static JsonNode value(Troupe troupe, EntityId entity, String key) {
    try {
      return troupe.get(entity).join().state().get(key);
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException troupeException
          && troupeException.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  private static long counter(Troupe troupe, EntityId entity) {
    JsonNode value = value(troupe, entity, "n");
    return value == null || value.isNull() ? 0 : value.asLong();
  }

  private static Set<String> set(Troupe troupe, EntityId entity) {
    Set<String> elements = new HashSet<>();
    JsonNode value = value(troupe, entity, "s");
    if (value != null) {
      value.forEach(element -> elements.add(element.asText()));
    }
    return elements;
  }

  /** Whether every DC has applied everything every other DC had when the tokens were taken. */
  private static boolean caughtUp(DataCentres dcs, Map<String, DependencyVector> tokens) {
    for (String name : tokens.keySet()) {
      for (Map.Entry<String, DependencyVector> token : tokens.entrySet()) {
        if (!dcs.shell(name).appliedVector().coversExcept(token.getValue(),
            dcs.shell(name).dataCentreId())) {
          return false;
        }
      }
    }
    return true;
  }

  private static Map<String, DependencyVector> tokens(DataCentres dcs, String... names) {
    Map<String, DependencyVector> tokens = new java.util.LinkedHashMap<>();
    for (String name : names) {
      tokens.put(name, dcs.shell(name).causalToken());
    }
    return tokens;
  }

  @Test
  void concurrentRegisterWritesConvergeToTheSameLastWriterEverywhere() {
    try (DataCentres dcs = open("a", "b")) {
      EntityId entity = account("r");
      List<TurnOutcome> atA = new ArrayList<>();
      List<TurnOutcome> atB = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        atA.add(dcs.troupe("a").assign(entity, "r", TextNode.valueOf("a" + i)).join());
        atB.add(dcs.troupe("b").assign(entity, "r", TextNode.valueOf("b" + i)).join());
      }
      Map<String, DependencyVector> tokens = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> caughtUp(dcs, tokens), TIMEOUT_MILLIS, "both DCs caught up");
      // Last writer wins on (commit timestamp, DC id), the same order in both DCs.
      long lastA = atA.get(19).version();
      long lastB = atB.get(19).version();
      int idA = dcs.shell("a").dataCentreId();
      int idB = dcs.shell("b").dataCentreId();
      boolean aWins = lastA > lastB || (lastA == lastB && idA > idB);
      String expected = aWins ? "a19" : "b19";
      assertEquals(expected, value(dcs.troupe("a"), entity, "r").asText());
      assertEquals(expected, value(dcs.troupe("b"), entity, "r").asText());
    }
  }

  @Test
  void aTypeDeclaredInOneDataCentreIsServedByTheOthersWithoutARestart() {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      dcs.troupe("a").defineType(SpecParser.parse("Wallet", ("{\"keys\": {\"coins\":"
          + " {\"kind\": \"counter\"}}}").getBytes(StandardCharsets.UTF_8), false)).join();
      Map<String, DependencyVector> tokens = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> caughtUp(dcs, tokens), TIMEOUT_MILLIS, "b applied a's declaration");
      assertTrue(dcs.troupe("b").type("Wallet").isPresent(),
          "b serves the type a declared, as a running engine");
      // And b runs turns against it: a counter key, as declared (schemaless would refuse an
      // increment of an undeclared key's register).
      dcs.troupe("b").increment(new EntityId("Wallet", "w"), "coins", 3).join();
      assertEquals(3, value(dcs.troupe("b"), new EntityId("Wallet", "w"), "coins").asLong());
    }
  }

  @Test
  void concurrentIncrementsAreAllCountedInEveryDataCentre() {
    try (DataCentres dcs = open("a", "b")) {
      EntityId entity = account("n");
      List<CompletableFuture<TurnOutcome>> writes = new ArrayList<>();
      for (int i = 1; i <= 100; i++) {
        writes.add(dcs.troupe("a").increment(entity, "n", i));
        writes.add(dcs.troupe("b").increment(entity, "n", 1000L * i));
        if (i % 25 == 0) {
          dcs.pullAll(); // replication while writes are in flight
        }
      }
      CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
      Map<String, DependencyVector> tokens = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> caughtUp(dcs, tokens), TIMEOUT_MILLIS, "both DCs caught up");
      long expected = 5050L + 5050L * 1000;
      assertEquals(expected, counter(dcs.troupe("a"), entity));
      assertEquals(expected, counter(dcs.troupe("b"), entity));
    }
  }

  @Test
  void aConcurrentAddWinsOverARemoveAndNoAddIsLost() {
    try (DataCentres dcs = open("a", "b")) {
      EntityId entity = account("s");
      dcs.troupe("a").add(entity, "s", TextNode.valueOf("kept")).join();
      dcs.troupe("a").add(entity, "s", TextNode.valueOf("removed")).join();
      Map<String, DependencyVector> first = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> caughtUp(dcs, first), TIMEOUT_MILLIS, "the adds replicated");
      assertEquals(Set.of("kept", "removed"), set(dcs.troupe("b"), entity));

      // Partitioned: a removes both, b adds "kept" again concurrently; both add their own.
      dcs.cut("a", "b");
      dcs.troupe("a").remove(entity, "s", TextNode.valueOf("kept")).join();
      dcs.troupe("a").remove(entity, "s", TextNode.valueOf("removed")).join();
      dcs.troupe("b").add(entity, "s", TextNode.valueOf("kept")).join();
      for (int i = 0; i < 20; i++) {
        dcs.troupe("a").add(entity, "s", TextNode.valueOf("a" + i)).join();
        dcs.troupe("b").add(entity, "s", TextNode.valueOf("b" + i)).join();
      }
      assertEquals(0, dcs.pullAll(), "nothing crosses a cut link");
      dcs.heal("a", "b");
      Map<String, DependencyVector> second = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> caughtUp(dcs, second), TIMEOUT_MILLIS, "healed and caught up");

      Set<String> expected = new HashSet<>(Set.of("kept"));
      for (int i = 0; i < 20; i++) {
        expected.add("a" + i);
        expected.add("b" + i);
      }
      assertEquals(expected, set(dcs.troupe("a"), entity), "add wins, nothing lost at a");
      assertEquals(expected, set(dcs.troupe("b"), entity), "add wins, nothing lost at b");
    }
  }

  @Test
  void aMultiEntityTransactionBecomesVisibleAtomicallyAtTheReceiver() throws Exception {
    try (DataCentres dcs = open("a", "b")) {
      EntityId left = account("left");
      EntityId right = account("right");
      int transactions = 40;
      AtomicBoolean writing = new AtomicBoolean(true);
      AtomicReference<String> torn = new AtomicReference<>();
      AtomicInteger reads = new AtomicInteger();
      Troupe receiver = dcs.troupe("b");
      Thread reader = Thread.ofPlatform().start(() -> {
        while (writing.get() && torn.get() == null) {
          try {
            TransactionOutcome snapshot = receiver.transact(
                new TransactionRequest(List.of(), List.of(left, right))).join();
            long l = counterOf(snapshot.entities().get(0).state());
            long r = counterOf(snapshot.entities().get(1).state());
            reads.incrementAndGet();
            if (l != r) {
              torn.set("a snapshot read saw left=" + l + " right=" + r);
            }
          } catch (CompletionException e) {
            // A snapshot read may abort on a lock conflict with an application; read again.
          }
        }
      });
      try {
        for (int i = 0; i < transactions; i++) {
          dcs.troupe("a").transact(new TransactionRequest(List.of(
              new TransactionRequest.Operation(left, new Turn.IncrementKey("n", 1)),
              new TransactionRequest.Operation(right, new Turn.IncrementKey("n", 1))),
              List.of(), TransactionRequest.Mode.DYNAMIC)).join();
          if (i % 5 == 0) {
            dcs.pullAll();
          }
        }
        Map<String, DependencyVector> tokens = tokens(dcs, "a", "b");
        dcs.pullUntil(() -> caughtUp(dcs, tokens), TIMEOUT_MILLIS, "b caught up");
      } finally {
        writing.set(false);
        reader.join();
      }
      assertEquals(null, torn.get());
      assertTrue(reads.get() > 0, "the reader read");
      assertEquals(transactions, counter(receiver, left));
      assertEquals(transactions, counter(receiver, right));
      // Applied here, not committed here: b's log ships none of it as b's own (no part, and the
      // decision of the applying transaction is flagged as a replica application).
      int b = dcs.shell("b").dataCentreId();
      // From what is still held: a read below the log's truncation is refused (truncated).
      long held = receiver.store().replicationLog().truncatedVector().get(b);
      List<ReplicationEntry> own =
          receiver.store().replicationLog().read(b, held, 10_000).entries();
      assertTrue(own.stream().noneMatch(entry -> entry instanceof ReplicationEntry.Decision),
          own.toString());
      assertTrue(own.stream().noneMatch(entry -> entry instanceof ReplicationEntry.Part part
          && (part.entity().equals(left) || part.entity().equals(right))), own.toString());
    }
  }

  private static long counterOf(JsonNode state) {
    JsonNode n = state == null ? null : state.get("n");
    return n == null || n.isNull() ? 0 : n.asLong();
  }

  @Test
  void causalOrderHoldsAcrossThreeDataCentresAndACutLinkIsBypassed() throws Exception {
    try (DataCentres dcs = open("a", "b", "c")) {
      EntityId x = account("x");
      EntityId y = account("y");
      dcs.cut("a", "c");
      long xVersion = dcs.troupe("a").assign(x, "r", LongNode.valueOf(1)).join().version();
      // b sees x, then writes y: y depends on x.
      long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
      while (value(dcs.troupe("b"), x, "r") == null) {
        assertTrue(System.currentTimeMillis() < deadline, "b never saw x");
        dcs.pull("b", "a");
        Thread.sleep(5);
      }
      assertTrue(dcs.troupe("b").currentTimestamp() > xVersion,
          "b's clock observed x before applying it: whatever b writes next is later than x");
      TurnOutcome yAtB = dcs.troupe("b").assign(y, "r", LongNode.valueOf(2)).join();
      assertTrue(yAtB.version() > xVersion);
      // b published its applying vector before applying x: y's log entry depends on x.
      int aId = dcs.shell("a").dataCentreId();
      int bId = dcs.shell("b").dataCentreId();
      ReplicationEntry yEntry = dcs.troupe("b").store().replicationLog()
          .read(bId, 0, 100).entries().stream()
          .filter(entry -> entry.timestamp() == yAtB.version()).findFirst().orElseThrow();
      assertTrue(yEntry.dependencies().get(aId) >= xVersion,
          "y depends on x: " + yEntry.dependencies() + " vs x at " + xVersion);

      // c receives b's y alone: it is durable at c, and held back, since x is not there.
      assertTrue(dcs.pullOrigin("c", "b", "b") > 0, "c received y");
      Thread.sleep(200);
      assertEquals(null, value(dcs.troupe("c"), y, "r"), "y is not visible without x");
      assertTrue(dcs.shell("c").status().pendingRemoteTransactions() >= 1,
          "y waits at c: " + dcs.shell("c").status());

      // With a-c cut, a's x reaches c through b (transitive forwarding); then y is applied.
      int checks = 0;
      while (value(dcs.troupe("c"), y, "r") == null) {
        assertTrue(System.currentTimeMillis() < deadline, "c never saw y: "
            + dcs.shell("c").status());
        dcs.pull("c", "a");
        dcs.pull("c", "b");
        dcs.pull("b", "c"); // b reports what it received (x) to c with its pull
        // Never y without x (y read first: x, once visible, stays).
        if (value(dcs.troupe("c"), y, "r") != null) {
          assertTrue(value(dcs.troupe("c"), x, "r") != null, "c shows y without x");
        }
        checks++;
        Thread.sleep(5);
      }
      assertEquals(1, value(dcs.troupe("c"), x, "r").asLong());
      assertTrue(dcs.shell("c").appliedVector().get(dcs.shell("a").dataCentreId()) > 0,
          "a's transactions reached c through b");
      assertTrue(checks > 0);
    }
  }

  @Test
  void aReceiverRestartedMidStreamLosesNothingAndAppliesNothingTwice() {
    // The applied vector is never recorded here (the first record is due after an hour): every
    // restart feeds again all that was received, most of it applied already; only the markers
    // keep it from counting twice.
    try (DataCentres dcs = open(Map.of("troupe.replication.applied-record-interval-millis",
        3_600_000), "a", "b")) {
      int entities = 10;
      int increments = 30;
      List<CompletableFuture<TurnOutcome>> writes = new ArrayList<>();
      for (int round = 0; round < increments; round++) {
        for (int e = 0; e < entities; e++) {
          writes.add(dcs.troupe("a").increment(account("c" + e), "n", 1));
        }
      }
      CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
      // A multi-entity transaction among them too.
      dcs.troupe("a").transact(new TransactionRequest(List.of(
          new TransactionRequest.Operation(account("c0"), new Turn.IncrementKey("n", 100)),
          new TransactionRequest.Operation(account("c1"), new Turn.IncrementKey("n", 100))),
          List.of(), TransactionRequest.Mode.DYNAMIC)).join();
      // b receives part of the stream and restarts with applications in flight, twice.
      dcs.pull("b", "a");
      dcs.pull("b", "a");
      dcs.restart("b");
      dcs.pull("b", "a");
      dcs.pull("b", "a");
      dcs.restart("b");
      dcs.pull("b", "a");
      dcs.restart("b");
      Map<String, DependencyVector> tokens = tokens(dcs, "a");
      dcs.pullUntil(() -> dcs.shell("b").appliedVector().coversExcept(tokens.get("a"),
          dcs.shell("b").dataCentreId()), TIMEOUT_MILLIS, "b caught up after its restarts");
      for (int e = 0; e < entities; e++) {
        long expected = increments + (e < 2 ? 100 : 0);
        assertEquals(expected, counter(dcs.troupe("b"), account("c" + e)), "c" + e);
      }
    }
  }

  @Test
  void theLogIsTruncatedOnceEveryDataCentreReceivedAndAppliedIt() {
    try (DataCentres dcs = open("a", "b", "c")) {
      for (int i = 0; i < 30; i++) {
        dcs.troupe("a").increment(account("log"), "n", 1).join();
        dcs.troupe("b").increment(account("log"), "n", 1).join();
      }
      long before = dcs.shell("a").status().logEntries();
      assertTrue(before >= 30, "a's own entries are in its log: " + before);
      // c is cut from both: nothing is stable, nothing of a or b may be truncated at a or b.
      dcs.cut("a", "c");
      dcs.cut("b", "c");
      Map<String, DependencyVector> tokens = tokens(dcs, "a", "b");
      dcs.pullUntil(() -> dcs.shell("b").appliedVector().coversExcept(tokens.get("a"),
          dcs.shell("b").dataCentreId()), TIMEOUT_MILLIS, "b applied a's writes");
      for (int i = 0; i < 20; i++) {
        dcs.pullAll(); // ticks pass: truncation would be due
      }
      assertTrue(dcs.shell("a").status().logEntries() >= before,
          "nothing truncated while c has not received it: " + dcs.shell("a").status());

      dcs.heal("a", "c");
      dcs.heal("b", "c");
      dcs.pullUntil(() -> dcs.shell("a").status().logEntries() < before
              && dcs.shell("b").status().logEntries() < before,
          TIMEOUT_MILLIS, "the logs truncated once c received everything");
      // Truncation needs every DC to have received the entries, not applied them.
      dcs.pullUntil(() -> dcs.shell("c").appliedVector().coversExcept(tokens.get("a"),
              dcs.shell("c").dataCentreId())
              && dcs.shell("c").appliedVector().coversExcept(tokens.get("b"),
              dcs.shell("c").dataCentreId()),
          TIMEOUT_MILLIS, "c applied everything");
      assertEquals(60, counter(dcs.troupe("c"), account("log")));
      int a = dcs.shell("a").dataCentreId();
      assertTrue(dcs.shell("a").stableVector().get(a) > 0, "a's entries are stable");
    }
  }

  @Test
  void aClosedShellAnswersItsWaitersAndRefusesBatches() {
    try (DataCentres dcs = open("a", "b")) {
      int a = dcs.shell("a").dataCentreId();
      ReplicationShell b = dcs.shell("b");
      DependencyVector unreachable = DependencyVector.EMPTY.atLeast(a, Long.MAX_VALUE / 2);
      CompletableFuture<Boolean> waiting = b.whenVisible(unreachable, TIMEOUT_MILLIS);
      assertFalse(waiting.isDone());
      b.close();
      assertFalse(waiting.join(), "a closed shell answers its waiters: not visible");
      CompletionException refused = org.junit.jupiter.api.Assertions.assertThrows(
          CompletionException.class,
          () -> b.received(a, new ReplicationBatch(a, List.of(), 1)).join());
      assertEquals(ErrorCode.UNAVAILABLE, ((TroupeException) refused.getCause()).code());
    }
  }

  @Test
  void causalTokensNameWhatWasSeenAndWaitForIt() {
    try (DataCentres dcs = open("a", "b")) {
      EntityId entity = account("t");
      TurnOutcome written = dcs.troupe("a").assign(entity, "r", TextNode.valueOf("v")).join();
      ReplicationShell a = dcs.shell("a");
      ReplicationShell b = dcs.shell("b");
      DependencyVector token = a.causalToken();
      assertTrue(token.get(a.dataCentreId()) >= written.version(), "the token covers the write");
      assertTrue(a.whenVisible(token, 0).join(), "a token is visible where it was taken");
      assertFalse(b.whenVisible(token, 50).join(), "not visible at b before replication");

      CompletableFuture<Boolean> visible = b.whenVisible(token, TIMEOUT_MILLIS);
      dcs.pullUntil(visible::isDone, TIMEOUT_MILLIS, "the token became visible at b");
      assertTrue(visible.join());
      assertEquals("v", value(dcs.troupe("b"), entity, "r").asText(),
          "what a token names is readable once it is visible");
      long clockBefore = dcs.troupe("b").currentTimestamp();
      DependencyVector bToken = b.causalToken();
      assertTrue(bToken.get(b.dataCentreId()) >= clockBefore, "b's own entry is its clock");
      assertTrue(bToken.get(a.dataCentreId()) >= token.get(a.dataCentreId()),
          "b's token carries what it saw of a");
      ReplicationStatus status = b.status();
      assertEquals(0, status.pendingRemoteTransactions(), status.toString());
    }
  }
}
