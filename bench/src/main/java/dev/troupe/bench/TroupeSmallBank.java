package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.StateProjection;
import dev.troupe.runtime.EntityView;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * SmallBank on an embedded Troupe engine: one {@code Branch} entity per branch, holding its
 * customers' accounts as members of two key families, {@code checking[c<i>]} and {@code
 * savings[c<i>]}. The type's admission policy is {@code keys} (key-level locking: transactions on
 * different customers of one branch run side by side) or {@code serial} (actor-level: one
 * transaction at a time per branch), the comparison SmSa makes (smsa.txt §3.3.4, §4.4).
 *
 * <p>How each transaction runs:
 *
 * <ul>
 *   <li>DepositChecking, TransactSavings, WriteCheck: one action (a single-entity transaction);
 *   <li>Balance: one read of the customer's two accounts, a projection of the branch (one
 *       committed state, so both are consistent; only the two are rendered);
 *   <li>SendPayment, MultiTransfer: one static transaction of actions on every branch involved,
 *       {@code planned} or {@code dynamic} as the view asks; a payer short of money fails its
 *       precondition and the whole transaction aborts;
 *   <li>Amalgamate: its credit depends on what it reads, so it reads the payer's accounts from
 *       the latest committed state (no locks), then runs a static transaction that zeroes them
 *       only if they still hold what was read ({@code close}, a compare-and-set precondition) and
 *       credits the other customer, {@code planned} or {@code dynamic} like the others. When the
 *       accounts changed in between, it reads again (optimistic concurrency control, up to
 *       {@link #MAX_AMALGAMATE_ATTEMPTS} times).
 *       <p>An interactive transaction would read under locks instead, but a dynamic transaction
 *       always dies against a planned one (planned transactions are older than every dynamic one),
 *       so on a hot branch with planned traffic it would starve.
 * </ul>
 *
 * <p>Thread-safe; one engine serves several views (planned and dynamic) that share its data.
 */
final class TroupeSmallBank implements AutoCloseable {
  /** Attempts of an Amalgamate whose accounts keep changing before it counts as aborted. */
  static final int MAX_AMALGAMATE_ATTEMPTS = 50;

  static final String BRANCH_SPEC = """
      type: Branch
      admission: %s
      keys:
        checking: {kind: register, default: 0, family: true}
        savings:  {kind: register, default: 0, family: true}
      actions:
        depositChecking:
          params: {customer: string, amount: int}
          members: {checking: "checking[customer]"}
          pre: ["amount > 0"]
          effect: {checking: "checking + amount"}
        adjustChecking:
          params: {customer: string, amount: int}
          members: {checking: "checking[customer]"}
          effect: {checking: "checking + amount"}
        withdrawChecking:
          params: {customer: string, amount: int}
          members: {checking: "checking[customer]"}
          pre: ["amount > 0", "checking >= amount"]
          effect: {checking: "checking - amount"}
        transactSavings:
          params: {customer: string, amount: int}
          members: {savings: "savings[customer]"}
          pre: ["savings + amount >= 0"]
          effect: {savings: "savings + amount"}
        writeCheck:
          params: {customer: string, amount: int}
          members: {checking: "checking[customer]", savings: "savings[customer]"}
          pre: ["amount > 0"]
          effect: {checking: "checking + savings < amount ? checking - amount - 1 : checking - amount"}
        close:
          params: {customer: string, checkingSeen: int, savingsSeen: int}
          members: {checking: "checking[customer]", savings: "savings[customer]"}
          pre: ["checking == checkingSeen", "savings == savingsSeen"]
          effect: {checking: "0", savings: "0"}
      """;

  private final String policy;
  private final TemporaryDirectory directory;
  private final Troupe troupe;

  private TroupeSmallBank(String policy, TemporaryDirectory directory, Troupe troupe) {
    this.policy = policy;
    this.directory = directory;
    this.troupe = troupe;
  }

  /**
   * Opens a fresh engine whose Branch type has admission {@code policy} ({@code keys} or {@code
   * serial}) and loads every customer with {@code openingBalance} in each account.
   */
  static TroupeSmallBank open(String policy, SmallBankWorkload.Shape shape, long openingBalance,
      int concurrency) throws Exception {
    TemporaryDirectory directory = TemporaryDirectory.create("smallbank-" + policy);
    Troupe troupe = null;
    try {
      troupe = Troupe.open(RuntimeSettings.forDirectory(directory.resolve("data")));
      troupe.defineType(SpecParser.parse("Branch",
          BRANCH_SPEC.formatted(policy).getBytes(StandardCharsets.UTF_8), true)).join();
      TroupeSmallBank bank = new TroupeSmallBank(policy, directory, troupe);
      bank.load(shape, openingBalance, concurrency);
      return bank;
    } catch (Exception | Error e) {
      if (troupe != null) {
        troupe.close();
      }
      directory.close();
      throw e;
    }
  }

  Troupe troupe() {
    return troupe;
  }

  private void load(SmallBankWorkload.Shape shape, long openingBalance, int concurrency)
      throws InterruptedException {
    Map<String, JsonNode> accounts = new LinkedHashMap<>();
    for (int index = 0; index < shape.customersPerBranch(); index++) {
      accounts.put(checking(index), LongNode.valueOf(openingBalance));
      accounts.put(savings(index), LongNode.valueOf(openingBalance));
    }
    try (var progress = ProgressBars.start("load troupe " + policy, shape.branches(),
        "branches", 1)) {
      BoundedSubmission.run(shape.branches(), concurrency, progress,
          branch -> troupe.patch(branch(branch), accounts));
    }
  }

  /** The sum of every account. */
  long totalMoney(SmallBankWorkload.Shape shape) {
    long total = 0;
    for (int branch = 0; branch < shape.branches(); branch++) {
      JsonNode state = troupe.get(branch(branch)).join().state();
      for (String family : List.of("checking", "savings")) {
        for (JsonNode value : state.get(family)) {
          total += value.asLong();
        }
      }
    }
    return total;
  }

  /** This engine driven with {@code mode} for multi-entity transactions. */
  SmallBankTarget view(TransactionRequest.Mode mode) {
    return transaction -> execute(transaction, mode);
  }

  private SmallBankTarget.Outcome execute(SmallBankWorkload.Transaction transaction,
      TransactionRequest.Mode mode) {
    try {
      switch (transaction) {
        case SmallBankWorkload.Balance balance -> {
          EntityView view = troupe.get(branch(balance.customer().branch()),
              accounts(balance.customer())).join();
          // Both accounts come from one committed state of the branch.
          member(view, "checking", balance.customer());
          member(view, "savings", balance.customer());
        }
        case SmallBankWorkload.DepositChecking deposit ->
            invoke(deposit.customer(), "depositChecking", deposit.amount());
        case SmallBankWorkload.TransactSavings savings ->
            invoke(savings.customer(), "transactSavings", savings.amount());
        case SmallBankWorkload.WriteCheck check ->
            invoke(check.customer(), "writeCheck", check.amount());
        case SmallBankWorkload.SendPayment payment -> troupe.transact(new TransactionRequest(
            List.of(operation(payment.from(), "withdrawChecking", payment.amount()),
                operation(payment.to(), "depositChecking", payment.amount())),
            List.of(), mode)).join();
        case SmallBankWorkload.MultiTransfer transfer -> {
          List<TransactionRequest.Operation> operations = new ArrayList<>();
          for (SmallBankWorkload.Customer source : transfer.sources()) {
            operations.add(operation(source, "withdrawChecking", transfer.debitPerSource()));
          }
          for (SmallBankWorkload.Customer destination : transfer.destinations()) {
            operations.add(
                operation(destination, "depositChecking", transfer.creditPerDestination()));
          }
          troupe.transact(new TransactionRequest(operations, List.of(), mode)).join();
        }
        case SmallBankWorkload.Amalgamate amalgamate -> {
          return amalgamate(amalgamate, mode);
        }
      }
      return SmallBankTarget.Outcome.COMMITTED;
    } catch (CompletionException e) {
      return outcomeOf(e);
    }
  }

  private SmallBankTarget.Outcome amalgamate(SmallBankWorkload.Amalgamate amalgamate,
      TransactionRequest.Mode mode) {
    EntityId from = branch(amalgamate.from().branch());
    for (int attempt = 1; ; attempt++) {
      EntityView seen = troupe.get(from, accounts(amalgamate.from())).join();
      long checking = member(seen, "checking", amalgamate.from());
      long savings = member(seen, "savings", amalgamate.from());
      ObjectNode close = customerParams(amalgamate.from());
      close.put("checkingSeen", checking);
      close.put("savingsSeen", savings);
      List<TransactionRequest.Operation> operations = new ArrayList<>();
      operations.add(new TransactionRequest.Operation(from, action("close", close)));
      if (checking + savings != 0) {
        operations.add(operation(amalgamate.to(), "adjustChecking", checking + savings));
      }
      try {
        troupe.transact(new TransactionRequest(operations, List.of(), mode)).join();
        return SmallBankTarget.Outcome.COMMITTED;
      } catch (CompletionException e) {
        SmallBankTarget.Outcome outcome = outcomeOf(e);
        // close's preconditions only compare with what was read: refused means "changed since".
        if (outcome == SmallBankTarget.Outcome.REJECTED && attempt < MAX_AMALGAMATE_ATTEMPTS) {
          continue;
        }
        return outcome == SmallBankTarget.Outcome.REJECTED
            ? SmallBankTarget.Outcome.ABORTED : outcome;
      }
    }
  }

  /** A refused precondition is the transaction's own verdict; a lost conflict is an abort. */
  private static SmallBankTarget.Outcome outcomeOf(CompletionException e) {
    if (!(e.getCause() instanceof TroupeException error)) {
      throw e;
    }
    if (error.code() == ErrorCode.PRECONDITION_FAILED
        || error.code() == ErrorCode.ABORTED && "precondition_failed".equals(error.reason())) {
      return SmallBankTarget.Outcome.REJECTED;
    }
    if (error.code() == ErrorCode.ABORTED) {
      return SmallBankTarget.Outcome.ABORTED;
    }
    throw e; // unavailable, outcome_unknown, invalid: the run is broken
  }

  private void invoke(SmallBankWorkload.Customer customer, String action, long amount) {
    troupe.invoke(branch(customer.branch()), action, amountParams(customer, amount)).join();
  }

  private static TransactionRequest.Operation operation(SmallBankWorkload.Customer customer,
      String action, long amount) {
    return new TransactionRequest.Operation(branch(customer.branch()),
        action(action, amountParams(customer, amount)));
  }

  private static Turn action(String action, ObjectNode params) {
    return new Turn.InvokeAction(action, params);
  }

  private static ObjectNode customerParams(SmallBankWorkload.Customer customer) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("customer", "c" + customer.index());
    return params;
  }

  private static ObjectNode amountParams(SmallBankWorkload.Customer customer, long amount) {
    ObjectNode params = customerParams(customer);
    params.put("amount", amount);
    return params;
  }

  /**
   * The customer's two accounts, a projection of the branch: both from one committed state, and
   * only they are rendered (a user reads two members of a family of hundreds this way).
   */
  private static StateProjection accounts(SmallBankWorkload.Customer customer) {
    return new StateProjection(List.of(checking(customer.index()), savings(customer.index())));
  }

  private static long member(EntityView view, String family, SmallBankWorkload.Customer customer) {
    return view.state().get(family).get("c" + customer.index()).asLong();
  }

  static EntityId branch(int branch) {
    return new EntityId("Branch", "b" + branch);
  }

  private static String checking(int index) {
    return ActionSpec.MemberBinding.memberKey("checking", "c" + index);
  }

  private static String savings(int index) {
    return ActionSpec.MemberBinding.memberKey("savings", "c" + index);
  }

  @Override
  public void close() {
    troupe.close();
    directory.close();
  }
}
