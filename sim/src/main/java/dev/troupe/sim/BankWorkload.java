package dev.troupe.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.check.LockLevelHistory;
import dev.troupe.txn.check.RecordedTransaction;
import dev.troupe.txn.check.SerializabilityChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bank workload of a {@link Simulation}: clients move money between accounts in multi-entity
 * transactions (withdraw, deposit, and a receipt entity that records the transfer; under serial
 * and keys admission some run interactively, step by step), credit accounts in single-entity
 * turns (which record their id in the account's {@code deposits} set), and audit pairs of
 * accounts in read-only transactions.
 *
 * <p><b>Checked after the run</b> on the node's durable state:
 *
 * <ul>
 *   <li>no acknowledged transfer or credit is lost: each transfer's receipt exists, each credit's
 *       id is in its account's set;
 *   <li>no refused one took effect;
 *   <li>atomicity: each account holds its opening balance plus exactly the transfers whose
 *       receipts exist and the credits recorded in it (so one with an unknown outcome took effect
 *       entirely or not at all);
 *   <li>money is conserved (opening money plus recorded credits) and no balance is negative;
 *   <li>under {@code serial} and {@code keys} admission, the history of committed requests of
 *       every workload (the versions each read and wrote) is conflict-serializable at the
 *       granularity the admission policy locks at, and what the node reported matches its
 *       journal. Not under {@code psac}: transfers commute, so two accounts may order two of them
 *       oppositely, which no client can tell (serializable by outcome); money and atomicity are
 *       what PSAC promises here.
 * </ul>
 */
final class BankWorkload implements Workload {
  static final String ACCOUNT_SPEC = """
      type: Account
      %s
      keys:
        balance:  {kind: register, default: 0}
        deposits: {kind: set}
      actions:
        credit:   {params: {amount: int, id: string}, pre: ["amount > 0"],
                   effect: {balance: "balance + amount", deposits: "deposits + [id]"}}
        withdraw: {params: {amount: int}, pre: ["amount > 0", "balance >= amount"],
                   effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["amount > 0"],
                   effect: {balance: "balance + amount"}}
      """;

  /**
   * A transfer; a credit when {@code from} is -1 (a single-entity turn on {@code to}); an audit
   * when {@code amount} is 0 (a read-only transaction over {@code from} and {@code to}).
   */
  private static final class Transfer extends ClientCall {
    final int from;
    final int to;
    final long amount;

    Transfer(String id, int from, int to, long amount, long issuedMillis, Runnable next) {
      super(id, issuedMillis, next);
      this.from = from;
      this.to = to;
      this.amount = amount;
    }

    boolean isCredit() {
      return from < 0;
    }

    boolean isAudit() {
      return amount == 0;
    }
  }

  /** Versions a committed request read and wrote, per entity, as its participants reported. */
  private record Observed(Map<EntityId, Long> reads, Map<EntityId, Long> writes) {}

  private final Simulation simulation;
  private final Simulation.Options options;
  private final Scheduler scheduler;
  private final CompiledType accountType;
  private final CompiledType receiptType = CompiledType.schemaless("Receipt");
  private final List<Transfer> transfers = new ArrayList<>();
  /** What the node reported of each request that committed while it was up (omniscient). */
  private final Map<String, Observed> observed = new LinkedHashMap<>();
  /** Edges of the serialization graph the serializability check built (0 if it did not run). */
  private int serializationEdges;

  BankWorkload(Simulation simulation) {
    this.simulation = simulation;
    this.options = simulation.options;
    this.scheduler = simulation.scheduler;
    this.accountType = CompiledType.compile(SpecParser.parse("Account",
        ACCOUNT_SPEC.formatted(options.admissionSpec()).getBytes(StandardCharsets.UTF_8), true));
  }

  @Override
  public Map<String, CompiledType> types() {
    return Map.of("Account", accountType, "Receipt", receiptType);
  }

  @Override
  public void preload() {
    for (int account = 0; account < options.accounts(); account++) {
      node().preload(account(account), List.of(new Operation.Assign("balance",
          LongNode.valueOf(options.openingBalance()))));
    }
  }

  @Override
  public Iterable<? extends ClientCall> calls() {
    return transfers;
  }

  @Override
  public int serializationEdges() {
    return serializationEdges;
  }

  private SimulatedCluster node() {
    return simulation.cluster;
  }

  @Override
  public ClientCall issue(String clientName, int sequence, Runnable next) {
    var random = scheduler.random();
    int kind = random.nextInt(10);
    boolean credit = kind < 3;
    boolean audit = kind == 3;
    // PSAC types take no part in interactive transactions.
    boolean interactive = kind == 4 && !options.admission().equals("psac");
    int from = random.nextInt(options.accounts());
    int to = (from + 1 + random.nextInt(options.accounts() - 1)) % options.accounts();
    long amount = audit ? 0 : 1 + random.nextLong(Math.max(1, options.openingBalance() / 2));
    Transfer transfer = new Transfer("bank-" + clientName + "-" + sequence, credit ? -1 : from,
        to, amount, scheduler.nowMillis(), next);
    transfers.add(transfer);
    if (interactive) {
      interactiveTransfer(transfer, clientName);
      return transfer;
    }
    simulation.toNode(clientName, "transfer " + transfer.id, node -> {
      java.util.function.Consumer<ClientCall.Outcome> answer = outcome -> simulation.toClient(
          clientName, "answer " + transfer.id, () -> transfer.decide(outcome));
      if (transfer.isCredit()) {
        ObjectNode params = Json.NODES.objectNode();
        params.put("amount", transfer.amount);
        params.put("id", transfer.id);
        node.turn(transfer.id, account(transfer.to), new Turn.InvokeAction("credit", params),
            result -> {
              if (result instanceof dev.troupe.txn.TurnResult.Done done) {
                observed.put(transfer.id, new Observed(
                    Map.of(account(transfer.to), done.readVersion()),
                    done.wrote() ? Map.of(account(transfer.to), done.version()) : Map.of()));
              }
              answer.accept(ClientCall.Outcome.of(result));
            });
      } else {
        node.transact(transfer.id, transfer.isAudit() ? audit(transfer) : parts(transfer),
            options.planned(), outcome -> {
          observe(transfer, outcome);
          answer.accept(ClientCall.Outcome.of(outcome));
        });
      }
    });
    return transfer;
  }

  /** Records the versions a committed transaction's participants reported. */
  private void observe(Transfer transfer, CoordinatorCore.Outcome outcome) {
    if (outcome instanceof CoordinatorCore.Outcome.Committed committed) {
      Map<EntityId, Long> reads = new LinkedHashMap<>();
      Map<EntityId, Long> writes = new LinkedHashMap<>();
      committed.results().forEach((entity, result) -> {
        reads.put(entity, result.readVersion());
        if (result.wrote()) {
          writes.put(entity, result.version());
        }
      });
      observed.put(transfer.id, new Observed(reads, writes));
    }
  }

  /**
   * The same transfer as an interactive transaction, request by request over the lossy client
   * network: begin, withdraw, deposit, receipt, commit. A refused step aborts it; a lost message
   * leaves the client to its timeout (and the node to its idle timeout).
   */
  private void interactiveTransfer(Transfer transfer, String clientName) {
    java.util.function.Consumer<ClientCall.Outcome> finish = transfer::decide;
    List<Map.Entry<EntityId, Turn>> steps = List.of(
        Map.entry(account(transfer.from), action("withdraw", transfer.amount)),
        Map.entry(account(transfer.to), action("deposit", transfer.amount)),
        Map.entry(receipt(transfer.id), parts(transfer).get(receipt(transfer.id)).turns().get(0)));
    simulation.toNode(clientName, "begin " + transfer.id, node -> {
      long id = node.beginInteractive(transfer.id);
      simulation.toClient(clientName, "begun " + transfer.id,
          () -> interactiveStep(transfer, clientName, id, steps, 0, finish));
    });
  }

  private void interactiveStep(Transfer transfer, String clientName, long id,
      List<Map.Entry<EntityId, Turn>> steps, int index,
      java.util.function.Consumer<ClientCall.Outcome> finish) {
    if (!transfer.isPending()) {
      return; // timed out meanwhile
    }
    if (index == steps.size()) {
      simulation.toNode(clientName, "commit " + transfer.id, node ->
        node.commitInteractive(id, outcome -> simulation.toClient(clientName,
            "committed " + transfer.id, () -> {
              observe(transfer, outcome);
              finish.accept(ClientCall.Outcome.of(outcome));
            })));
      return;
    }
    Map.Entry<EntityId, Turn> step = steps.get(index);
    simulation.toNode(clientName, "step " + index + " " + transfer.id, node ->
        node.stepInteractive(id, step.getKey(), step.getValue(), result -> simulation.toClient(
            clientName, "step answer " + transfer.id, () -> {
              if (result instanceof dev.troupe.txn.TurnResult.Done) {
                interactiveStep(transfer, clientName, id, steps, index + 1, finish);
                return;
              }
              // Refused (a precondition), killed by wait-die, or gone with a crash: nothing of
              // it commits. Abort it, in case it is still open.
              simulation.toNode(clientName, "abort " + transfer.id,
                  atNode -> atNode.abortInteractive(id));
              finish.accept(ClientCall.Outcome.ABORTED);
            })));
  }

  private Map<EntityId, CoordinatorCore.Part> parts(Transfer transfer) {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(account(transfer.from), part(action("withdraw", transfer.amount)));
    parts.put(account(transfer.to), part(action("deposit", transfer.amount)));
    Map<String, JsonNode> receipt = new LinkedHashMap<>();
    receipt.put("from", LongNode.valueOf(transfer.from));
    receipt.put("to", LongNode.valueOf(transfer.to));
    receipt.put("amount", LongNode.valueOf(transfer.amount));
    receipt.put("transfer", TextNode.valueOf(transfer.id));
    parts.put(receipt(transfer.id), part(new Turn.AssignKeys(receipt)));
    return parts;
  }

  /** A read-only transaction: the whole state of two accounts, read together. */
  private static Map<EntityId, CoordinatorCore.Part> audit(Transfer audit) {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(account(audit.from), new CoordinatorCore.Part(List.of(), true));
    parts.put(account(audit.to), new CoordinatorCore.Part(List.of(), true));
    return parts;
  }

  private static CoordinatorCore.Part part(Turn turn) {
    return new CoordinatorCore.Part(List.of(turn), false);
  }

  private static Turn action(String action, long amount) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("amount", amount);
    return new Turn.InvokeAction(action, params);
  }

  // ------------------------------------------------------------------ checks

  @Override
  public String check() {
    // Null: the account's final read answered corrupt_data (damage); it is excluded.
    EntityState[] accounts = new EntityState[options.accounts()];
    for (int account = 0; account < options.accounts(); account++) {
      accounts[account] = node().finalState(account(account));
    }
    long total = 0;
    long[] expected = new long[options.accounts()];
    java.util.Arrays.fill(expected, options.openingBalance());
    // Accounts a transfer or credit of unreadable fate touched: their expected balance is unknown.
    boolean[] unknownExpected = new boolean[options.accounts()];
    long credited = 0;
    for (Transfer transfer : transfers) {
      if (transfer.isAudit()) {
        continue; // checked through the history (serializability)
      }
      EntityState record = transfer.isCredit()
          ? accounts[transfer.to] : node().finalState(receipt(transfer.id));
      if (record == null) {
        unknownExpected[transfer.to] = true;
        if (!transfer.isCredit()) {
          unknownExpected[transfer.from] = true;
        }
        continue;
      }
      boolean receipted = transfer.isCredit()
          ? credits(record).contains(transfer.id) : record.exists();
      switch (transfer.outcome()) {
        case COMMITTED -> {
          if (!receipted) {
            return "acknowledged " + (transfer.isCredit() ? "credit " : "transfer ")
                + transfer.id + " was lost";
          }
        }
        case ABORTED -> {
          if (receipted) {
            return "refused " + (transfer.isCredit() ? "credit " : "transfer ") + transfer.id
                + " took effect";
          }
        }
        // Either way is right, as long as it is all or nothing (checked below). Pending and
        // liveness are the harness's checks.
        case UNKNOWN, PENDING -> {}
      }
      if (receipted && transfer.isCredit()) {
        expected[transfer.to] += transfer.amount;
        credited += transfer.amount;
      } else if (receipted) {
        expected[transfer.from] -= transfer.amount;
        expected[transfer.to] += transfer.amount;
      }
    }
    boolean everyBalanceKnown = true;
    for (int account = 0; account < options.accounts(); account++) {
      if (accounts[account] == null || unknownExpected[account]) {
        everyBalanceKnown = false;
      }
      if (accounts[account] == null) {
        continue;
      }
      long balance = balance(accounts[account]);
      if (!unknownExpected[account] && balance != expected[account]) {
        long difference = Math.abs(balance - expected[account]);
        int each = account;
        List<String> suspects = transfers.stream()
            .filter(transfer -> transfer.amount == difference
                && (transfer.from == each || transfer.to == each))
            .map(transfer -> transfer.id + " (" + transfer.outcome() + ")").toList();
        return "account " + account + " holds " + balance + " but its receipts say "
            + expected[account] + " (a transfer applied in part; requests of that amount on it: "
            + suspects + ")";
      }
      if (balance < 0) {
        return "account " + account + " is negative: " + balance;
      }
      total += balance;
    }
    long opened = options.openingBalance() * options.accounts();
    // Money is counted only when every balance and every receipt could be read.
    if (everyBalanceKnown && total != opened + credited) {
      return "money not conserved: " + total + " held, " + opened + " opened and " + credited
          + " credited";
    }
    return options.admission().equals("psac") ? null : checkSerializability();
  }

  /**
   * The history of every request that committed, with the versions its participants reported
   * (or, for one that committed only through recovery, the versions its surviving journal
   * records carry and no reads), must be conflict-serializable at the granularity the admission
   * policy locks at ({@link LockLevelHistory}: per key under {@code keys}, so that transactions
   * of any workload that wrote disjoint keys of one entity in either order are no cycle). The
   * history holds every workload's journaled writes, so a bank request conflicting with another
   * workload's write is checked too. A bank participant reads the keys it writes (every bank
   * action is a read-modify-write of them), or the whole entity where it writes nothing (an
   * audit). PSAC is not checked here: it is serializable by outcome, not by conflicts (see
   * docs/ARCHITECTURE.md). Also checks that what the node reported matches its journal.
   */
  private String checkSerializability() {
    Map<String, Map<EntityId, NodeStorage.CommittedWrite>> journal = node().committedWrites();
    List<LockLevelHistory.Transaction> history = new ArrayList<>();
    for (Map.Entry<String, Map<EntityId, NodeStorage.CommittedWrite>> request
        : journal.entrySet()) {
      Observed seen = observed.get(request.getKey());
      Map<EntityId, Long> journaled = new LinkedHashMap<>();
      request.getValue().forEach((entity, write) -> journaled.put(entity, write.version()));
      if (seen != null && !seen.writes().equals(journaled)) {
        return request.getKey() + " reported writing " + seen.writes() + " but its journal"
            + " records say " + journaled;
      }
      history.add(transaction(request.getKey(), seen == null ? Map.of() : seen.reads(),
          request.getValue()));
    }
    for (Map.Entry<String, Observed> request : observed.entrySet()) {
      if (journal.containsKey(request.getKey())) {
        continue;
      }
      if (!request.getValue().writes().isEmpty()) {
        return request.getKey() + " was reported committed but none of its records survived";
      }
      // A read-only transaction (an audit): what it read joins the history.
      history.add(transaction(request.getKey(), request.getValue().reads(), Map.of()));
    }
    return switch (SerializabilityChecker.check(LockLevelHistory.of(history))) {
      case SerializabilityChecker.Serializable serializable -> {
        serializationEdges = serializable.edges();
        yield null;
      }
      case SerializabilityChecker.Violation violation -> "not serializable: " + violation;
    };
  }

  /** One committed request per entity: what it read (reported) and wrote (journaled). */
  private LockLevelHistory.Transaction transaction(String id, Map<EntityId, Long> reads,
      Map<EntityId, NodeStorage.CommittedWrite> writes) {
    java.util.Set<EntityId> entities = new java.util.LinkedHashSet<>(reads.keySet());
    entities.addAll(writes.keySet());
    List<LockLevelHistory.EntityAccess> accesses = new ArrayList<>();
    for (EntityId entity : entities) {
      NodeStorage.CommittedWrite write = writes.get(entity);
      Long read = reads.get(entity);
      accesses.add(new LockLevelHistory.EntityAccess(entity.toString(),
          node().locksPerKey(entity), read == null ? -1 : read,
          write == null ? java.util.Set.of() : write.keys(), write == null,
          write == null ? 0 : write.version(), write == null ? java.util.Set.of() : write.keys(),
          write != null && write.wholeEntity()));
    }
    return new LockLevelHistory.Transaction(id, RecordedTransaction.Outcome.COMMITTED, accesses);
  }

  private static long balance(EntityState state) {
    return state.get("balance") instanceof RegisterValue register ? register.value().asLong() : 0;
  }

  private static java.util.Set<String> credits(EntityState state) {
    java.util.Set<String> ids = new java.util.HashSet<>();
    if (state.get("deposits") instanceof dev.troupe.model.value.SetValue set) {
      set.toJson().forEach(element -> ids.add(element.asText()));
    }
    return ids;
  }

  private static EntityId account(int account) {
    return new EntityId("Account", "a" + account);
  }

  private static EntityId receipt(String transfer) {
    return new EntityId("Receipt", transfer);
  }
}
