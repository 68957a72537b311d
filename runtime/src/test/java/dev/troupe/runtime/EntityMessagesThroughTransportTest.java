package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one-node evidence of the remote path (docs/ARCHITECTURE.md, "Entity messages between
 * nodes"): with {@code troupe.transport.route-entity-messages} on, EVERY message of the node to an
 * entity (turns, steps, prepares, changed forwards, decisions) and every answer (votes,
 * acknowledgements, turn and step answers) travels as an envelope through the node's transport,
 * encoded with WireCodec and decoded again ({@code encode-local-messages}). What passes here is
 * carried by the wire formats and the reply tables a cluster uses between nodes, unchanged.
 */
class EntityMessagesThroughTransportTest {
  /** The settings of every routed test (also {@link DependencyThroughTransportTest}'s). */
  static final String ROUTED = """
      troupe.transport.route-entity-messages = true
      troupe.transport.encode-local-messages = true
      """;

  static final String ACCOUNT = """
      type: Account
      keys:
        balance: {kind: register, default: 0}
        status:  {kind: register, default: "new"}
      actions:
        open:     {params: {initial: int}, pre: ["status == 'new'", "initial >= 0"],
                   effect: {status: "'open'", balance: "initial"}}
        withdraw: {params: {amount: int}, pre: ["status == 'open'", "amount > 0",
                   "balance - amount >= 0"], effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["status == 'open'", "amount > 0"],
                   effect: {balance: "balance + amount"}}
      """;
  private static final String TRANSFER = """
      type: Transfer
      actions:
        book: {params: {from: string, to: string, amount: int},
               sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                      {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
      """;

  private static final String COUNTER = """
      type: Counter
      keys:
        n: {kind: counter}
      """;

  @TempDir Path directory;

  private Troupe open(String... overrides) {
    return Troupe.open(RuntimeSettings.fromConfig(
        ConfigFactory.parseString(String.join("\n", overrides))
            .withFallback(ConfigFactory.parseString(ROUTED))
            .withFallback(ConfigFactory.parseMap(
                Map.of("troupe.data-directory", directory.toString())))
            .withFallback(ConfigFactory.load())));
  }

  private static void define(Troupe troupe, String yaml) {
    troupe.defineType(SpecParser.parse(null, yaml.getBytes(StandardCharsets.UTF_8), true)).join();
  }

  private static void defineBank(Troupe troupe) {
    define(troupe, ACCOUNT);
    define(troupe, ACCOUNT.replace("type: Account", "type: PsacAccount\nadmission: psac"));
    define(troupe, ACCOUNT.replace("type: Account", "type: KeysAccount\nadmission: keys"));
    define(troupe, TRANSFER);
    define(troupe, COUNTER);
  }

  private static Turn action(String name, String json) {
    return new Turn.InvokeAction(name, Json.parse(json));
  }

  private static long balance(Troupe troupe, String entity) {
    return troupe.getKey(EntityId.parse(entity), "balance").join().asLong();
  }

  private static TroupeException failure(CompletableFuture<?> future) {
    try {
      future.join();
    } catch (CompletionException e) {
      return assertInstanceOf(TroupeException.class, e.getCause());
    }
    throw new AssertionError("expected a failure");
  }

  private static TransactionRequest transaction(TransactionRequest.Mode mode,
      Object... entityThenTurn) {
    List<TransactionRequest.Operation> operations = new ArrayList<>();
    for (int i = 0; i < entityThenTurn.length; i += 2) {
      operations.add(new TransactionRequest.Operation(EntityId.parse((String) entityThenTurn[i]),
          (Turn) entityThenTurn[i + 1]));
    }
    return new TransactionRequest(operations, List.of(), mode);
  }

  /** Everything went through the transport as bytes, and nothing was lost or left waiting. */
  private static void assertAllThroughTheWire(Troupe troupe) {
    LocalTransport transport = troupe.transport();
    assertTrue(transport.delivered() > 0, "entity messages went through the transport");
    assertEquals(transport.delivered(), transport.encoded(), "every envelope went as bytes");
    assertEquals(0, transport.droppedForOtherNodes() + transport.droppedUndeliverable(),
        "no envelope failed its wire format or its delivery");
    assertEquals(0, troupe.remoteReplies().lateAnswers() + troupe.remoteReplies().timedOut());
  }

  @Test
  void singleTurnsSchemalessAndTypedGoThroughTheWire() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      EntityId counter = EntityId.parse("Counter/c");
      for (int i = 0; i < 20; i++) {
        troupe.increment(counter, "n", 1).join();
      }
      assertEquals(20, troupe.getKey(counter, "n").join().asLong());
      troupe.invoke(EntityId.parse("Account/a"), "open", Json.parse("{\"initial\": 100}")).join();
      troupe.invoke(EntityId.parse("Account/a"), "withdraw", Json.parse("{\"amount\": 30}"))
          .join();
      assertEquals(70, balance(troupe, "Account/a"));
      TroupeException refused = failure(troupe.invoke(EntityId.parse("Account/a"), "withdraw",
          Json.parse("{\"amount\": 1000}")));
      assertEquals(ErrorCode.PRECONDITION_FAILED, refused.code(), refused.getMessage());
      long before = troupe.transport().delivered();
      troupe.increment(counter, "n", 1).join();
      assertEquals(2, troupe.transport().delivered() - before,
          "a turn is one request envelope and one answer envelope");
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void readsAreServedByTheEntitysNodeThroughTheWire() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      EntityId account = EntityId.parse("Account/read");
      troupe.invoke(account, "open", Json.parse("{\"initial\": 100}")).join();
      long opened = troupe.currentTimestamp();
      troupe.invoke(account, "deposit", Json.parse("{\"amount\": 5}")).join();

      long before = troupe.transport().delivered();
      assertEquals(105, troupe.getKey(account, "balance").join().asLong());
      assertEquals(2, troupe.transport().delivered() - before,
          "a read is one request envelope and one answer envelope");
      EntityView latest = troupe.get(account).join();
      assertEquals("open", latest.state().path("status").asText());
      assertEquals(100, troupe.readAt(account, opened).join().state().path("balance").asLong(),
          "a read ?at= is served by the entity's node too");
      assertEquals(ErrorCode.NOT_FOUND,
          failure(troupe.get(EntityId.parse("Account/nobody"))).code());
      assertEquals(ErrorCode.NOT_FOUND, failure(troupe.getKey(account, "nokey")).code());
      assertEquals(ErrorCode.NOT_FOUND,
          failure(troupe.readAt(account, opened - 1_000_000)).code(), "not yet existing then");
      assertEquals(0, troupe.remoteReplies().pendingCount());
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void dynamicAndPlannedTransactionsCommitAndANoVoteAbortsAllOrNothing() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      for (String account : List.of("Account/a", "Account/b", "Account/c", "PsacAccount/p",
          "PsacAccount/q")) {
        troupe.invoke(EntityId.parse(account), "open", Json.parse("{\"initial\": 100}")).join();
      }
      for (TransactionRequest.Mode mode : List.of(TransactionRequest.Mode.DYNAMIC,
          TransactionRequest.Mode.PLANNED)) {
        troupe.transact(transaction(mode,
            "Account/a", action("withdraw", "{\"amount\": 10}"),
            "Account/b", action("deposit", "{\"amount\": 5}"),
            "Account/c", action("deposit", "{\"amount\": 5}"),
            "PsacAccount/p", action("withdraw", "{\"amount\": 7}"),
            "PsacAccount/q", action("deposit", "{\"amount\": 7}"))).join();
      }
      assertEquals(80, balance(troupe, "Account/a"));
      assertEquals(110, balance(troupe, "Account/b"));
      assertEquals(86, balance(troupe, "PsacAccount/p"));
      assertEquals(114, balance(troupe, "PsacAccount/q"));
      // A participant votes no (its precondition fails): nothing commits anywhere.
      for (TransactionRequest.Mode mode : TransactionRequest.Mode.values()) {
        TroupeException refused = failure(troupe.transact(transaction(mode,
            "Account/a", action("deposit", "{\"amount\": 1}"),
            "PsacAccount/p", action("withdraw", "{\"amount\": 1000}"))));
        assertEquals(ErrorCode.ABORTED, refused.code(), refused.getMessage());
        assertEquals("precondition_failed", refused.reason(), "the no vote's reason travelled");
      }
      assertEquals(80, balance(troupe, "Account/a"));
      assertEquals(86, balance(troupe, "PsacAccount/p"));
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void syncActionsBringTheirCallsAlong() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      troupe.invoke(EntityId.parse("Account/x"), "open", Json.parse("{\"initial\": 50}")).join();
      troupe.invoke(EntityId.parse("Account/y"), "open", Json.parse("{\"initial\": 0}")).join();
      troupe.invoke(EntityId.parse("Transfer/t"), "book",
          Json.parse("{\"from\": \"x\", \"to\": \"y\", \"amount\": 20}")).join();
      assertEquals(30, balance(troupe, "Account/x"));
      assertEquals(20, balance(troupe, "Account/y"));
      TroupeException refused = failure(troupe.invoke(EntityId.parse("Transfer/t"), "book",
          Json.parse("{\"from\": \"x\", \"to\": \"y\", \"amount\": 500}")));
      assertEquals(ErrorCode.PRECONDITION_FAILED, refused.code(), refused.getMessage());
      assertEquals(30, balance(troupe, "Account/x"));
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void interactiveStepsCommitAndAbortThroughTheWire() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      EntityId a = EntityId.parse("Account/ia");
      EntityId b = EntityId.parse("KeysAccount/ib");
      troupe.invoke(a, "open", Json.parse("{\"initial\": 40}")).join();
      troupe.invoke(b, "open", Json.parse("{\"initial\": 40}")).join();

      long committed = troupe.beginInteractive();
      assertEquals(40, troupe.readInteractive(committed, a).join().state().path("balance")
          .asLong());
      troupe.stepInteractive(committed, a, action("withdraw", "{\"amount\": 15}")).join();
      troupe.stepInteractive(committed, b, action("deposit", "{\"amount\": 15}")).join();
      troupe.commitInteractive(committed).join();
      assertEquals(25, balance(troupe, "Account/ia"));
      assertEquals(55, balance(troupe, "KeysAccount/ib"));

      long aborted = troupe.beginInteractive();
      troupe.stepInteractive(aborted, a, action("withdraw", "{\"amount\": 5}")).join();
      troupe.abortInteractive(aborted);
      // The abort released the lock through the wire: a later turn is not blocked by it.
      troupe.invoke(a, "deposit", Json.parse("{\"amount\": 1}")).join();
      assertEquals(26, balance(troupe, "Account/ia"));
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void anIdempotentWriteRecordsItsKeyThroughTheWire() {
    try (Troupe troupe = open()) {
      define(troupe, COUNTER);
      EntityId entity = EntityId.parse("Counter/idem");
      IdempotencyRecord record = IdempotencyRecord.pending("\u0000key-1", new byte[32],
          System.currentTimeMillis());
      List<CompletableFuture<TurnOutcome>> write = new ArrayList<>();
      assertTrue(troupe.idempotently(record, () -> write.add(troupe.increment(entity, "n", 3))));
      write.getFirst().join();
      assertEquals(3, troupe.getKey(entity, "n").join().asLong());
      assertTrue(troupe.idempotencyRecord("\u0000key-1").isPresent(),
          "the key's record was committed with the write");
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void anIdempotencyRecordTravelsWithItsTurnAndCommitsAtTheEntitysNode() throws Exception {
    try (Troupe troupe = open()) {
      define(troupe, COUNTER);
      EntityId entity = EntityId.parse("Counter/travelled");
      long transactionId = troupe.store().newTransactionId();
      IdempotencyRecord record = IdempotencyRecord.pending("\u0000key-2", new byte[32],
          System.currentTimeMillis());
      // What another node sends: nothing is attached in this node's store beforehand.
      CompletableFuture<dev.troupe.txn.TurnResult> answer = troupe.remoteReplies().expect(
          RemoteReplies.Kind.TURN, transactionId, entity, 10_000);
      troupe.transport().send(new dev.troupe.txn.wire.Envelope(0,
          new dev.troupe.txn.wire.Envelope.Destination.ToEntity(entity),
          new dev.troupe.txn.wire.WireMessage.TurnRequest(transactionId, entity,
              troupeTypes(troupe).referenceOf(troupeTypes(troupe).typeOf(entity)),
              new Turn.IncrementKey("n", 4),
              dev.troupe.storage.Codec.encodeIdempotency(record))));
      assertInstanceOf(dev.troupe.txn.TurnResult.Done.class,
          answer.get(10, java.util.concurrent.TimeUnit.SECONDS));
      IdempotencyRecord stored = troupe.idempotencyRecord("\u0000key-2").orElseThrow(
          () -> new AssertionError("the record was written with the turn's commit"));
      assertEquals(entity, stored.entity());
      assertTrue(stored.commitTimestamp() > 0);
      assertTrue(!troupe.idempotentWriteRunning("\u0000key-2"), "detached once answered");
      assertAllThroughTheWire(troupe);
    }
  }

  @Test
  void anAnswerAfterItsCallerGaveUpIsDroppedAndCounted() throws Exception {
    try (Troupe troupe = open("troupe.transport.pending-reply-timeout-millis = 500")) {
      EntityId entity = EntityId.parse("Box/late");
      // An interactive transaction holds the entity, so a turn on it waits past its caller's
      // 500 ms; once the holder commits, the turn runs and its answer arrives late.
      long holder = troupe.beginInteractive();
      troupe.stepInteractive(holder, entity, new Turn.AssignKeys(Map.of("x", Json.parse("1"))))
          .join();
      CompletableFuture<TurnOutcome> waiting = troupe.assign(entity, "y", Json.parse("2"));
      TroupeException unknown = failure(waiting);
      assertEquals(ErrorCode.OUTCOME_UNKNOWN, unknown.code(), unknown.getMessage());
      assertEquals(1, troupe.remoteReplies().timedOut());
      troupe.commitInteractive(holder).join();
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (troupe.remoteReplies().lateAnswers() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertEquals(1, troupe.remoteReplies().lateAnswers(), "the late answer was counted");
      assertEquals(0, troupe.remoteReplies().pendingCount());
      assertEquals(2, troupe.getKey(entity, "y").join().asInt(),
          "the turn committed: its outcome was unknown to its caller, not lost");
    }
  }

  @Test
  void aTypeVersionTheReceiverDoesNotKnowIsAnUnknownTypeAnswer() {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      TypeRegistry types = troupeTypes(troupe);
      assertTrue(types.find("Account", 12345).isEmpty());
      assertTrue(types.find("Account", types.referenceOf(
          types.typeOf(EntityId.parse("Account/a"))).version()).isPresent());
      assertTrue(types.find("Unknown", 0).orElseThrow().isSchemaless());
    }
  }

  @Test
  void aTurnOrPrepareNamingATypeVersionUnknownHereIsAnsweredUnknownType() throws Exception {
    try (Troupe troupe = open()) {
      defineBank(troupe);
      EntityId account = EntityId.parse("Account/typed");
      long transactionId = troupe.store().newTransactionId();
      // What a node that loaded a newer definition would send: this node answers unknown_type.
      CompletableFuture<dev.troupe.txn.TurnResult> answer = troupe.remoteReplies().expect(
          RemoteReplies.Kind.TURN, transactionId, account, 10_000);
      troupe.transport().send(new dev.troupe.txn.wire.Envelope(0,
          new dev.troupe.txn.wire.Envelope.Destination.ToEntity(account),
          new dev.troupe.txn.wire.WireMessage.TurnRequest(transactionId, account,
              new dev.troupe.txn.wire.TypeReference("Account", 12345), action("open",
                  "{\"initial\": 1}"))));
      dev.troupe.txn.TurnResult.Failed refused = assertInstanceOf(
          dev.troupe.txn.TurnResult.Failed.class,
          answer.get(10, java.util.concurrent.TimeUnit.SECONDS));
      assertEquals(ErrorCode.UNKNOWN_TYPE, refused.error().code());
      // A prepare of an attempt no coordinator here runs: its no vote is dropped and counted.
      troupe.transport().send(new dev.troupe.txn.wire.Envelope(0,
          new dev.troupe.txn.wire.Envelope.Destination.ToEntity(account),
          new dev.troupe.txn.wire.WireMessage.Prepare(transactionId + 64, transactionId + 64,
              account, new dev.troupe.txn.wire.TypeReference("Account", 12345), List.of(),
              false, List.of(), Map.of(), false)));
      assertEquals(1, troupe.inbox().orphanedCoordinatorAnswers());
      assertEquals(ErrorCode.NOT_FOUND, failure(troupe.get(account)).code(), "nothing ran");
    }
  }

  private static TypeRegistry troupeTypes(Troupe troupe) {
    try {
      var field = Troupe.class.getDeclaredField("types");
      field.setAccessible(true);
      return (TypeRegistry) field.get(troupe);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  /**
   * Bank transfers between random accounts, concurrently, in both modes and with PSAC accounts,
   * every message through the wire: money is conserved and no balance goes negative.
   */
  @Test
  void concurrentBankTransfersConserveMoney() {
    int accounts = 8;
    long initial = 1_000;
    int transfers = 600;
    try (Troupe troupe = open()) {
      defineBank(troupe);
      List<String> names = new ArrayList<>();
      for (int i = 0; i < accounts; i++) {
        names.add((i % 2 == 0 ? "Account/" : "PsacAccount/") + "bank" + i);
        troupe.invoke(EntityId.parse(names.get(i)), "open",
            Json.parse("{\"initial\": " + initial + "}")).join();
      }
      List<CompletableFuture<?>> running = new ArrayList<>();
      int committed = 0;
      for (int i = 0; i < transfers; i++) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int from = random.nextInt(accounts);
        int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
        int amount = 1 + random.nextInt(300);
        running.add(troupe.transact(transaction(
            i % 2 == 0 ? TransactionRequest.Mode.DYNAMIC : TransactionRequest.Mode.PLANNED,
            names.get(from), action("withdraw", "{\"amount\": " + amount + "}"),
            names.get(to), action("deposit", "{\"amount\": " + amount + "}"))));
        if (running.size() == 32) {
          committed += settle(running);
        }
      }
      committed += settle(running);
      long total = 0;
      for (String name : names) {
        long balance = balance(troupe, name);
        assertTrue(balance >= 0, name + " went negative: " + balance);
        total += balance;
      }
      assertEquals(accounts * initial, total, "money is conserved");
      assertTrue(committed > transfers / 2, "most transfers committed: " + committed);
      assertAllThroughTheWire(troupe);
    }
  }

  /** Waits for every running transfer; returns how many committed (the rest failed cleanly). */
  private static int settle(List<CompletableFuture<?>> running) {
    int committed = 0;
    for (CompletableFuture<?> transfer : running) {
      try {
        transfer.join();
        committed++;
      } catch (CompletionException e) {
        TroupeException error = assertInstanceOf(TroupeException.class, e.getCause());
        assertEquals(ErrorCode.ABORTED, error.code(), error.getMessage());
        assertEquals("precondition_failed", error.reason(), error.getMessage());
      }
    }
    running.clear();
    return committed;
  }
}
