package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.TransactionRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * SmallBank on Troupe over its REST API, the path an application takes (issue 20): a {@code troupe
 * serve} process of its own, the {@code Branch} type of {@link TroupeSmallBank} defined with
 * {@code PUT /v1/types/Branch}, and every transaction the same requests a client would send:
 *
 * <ul>
 *   <li>DepositChecking, TransactSavings, WriteCheck: {@code POST
 *       /v1/entities/Branch/{id}/actions/{action}?state=none} (the answer carries the version
 *       only: the client needs no state);
 *   <li>Balance: {@code GET /v1/entities/Branch/{id}?key=checking[c]&key=savings[c]} (the
 *       customer's two members, from one committed state of the branch: a projection, which
 *       renders those two, not the branch's 200 customers);
 *   <li>SendPayment, MultiTransfer: {@code POST /v1/transactions} of actions on every branch
 *       involved, in the view's mode;
 *   <li>Amalgamate: a GET of the payer's two members (as Balance), then a transaction whose {@code close} action
 *       zeroes the accounts only if they still hold what was read (as {@link TroupeSmallBank}).
 * </ul>
 *
 * <p>Answers map to outcomes as in the embedded target: 200 committed; {@code
 * precondition_failed} (or {@code aborted} for that reason) refused by the transaction's own
 * logic; other {@code aborted} given up; anything else breaks the run.
 *
 * <p>Thread-safe: connections (one keep-alive connection each, {@link HttpConnection}) are
 * borrowed from a pool per request, so the harness's fresh worker threads of every round reuse
 * them.
 */
final class RestSmallBank implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  /**
   * Request admission without its adaptive per-class limits (only the fixed in-flight bound):
   * the adaptive transactions class starts at 32 concurrent transactions and would refuse (429,
   * retry after 1 s) the rest of the 64 clients' closed loop, whose concurrency is bounded
   * already. Admission is load shedding for overload, measured by {@code bench overload};
   * PostgreSQL's side has no admission control either (one connection per client).
   */
  static final String FIXED_ADMISSION = "troupe.http.request-admission.adaptive=false";
  private static final Pattern CONFLICT_RETRIES =
      Pattern.compile("(?m)^troupe_transaction_lock_conflict_retries_total (\\d+)");

  private final TemporaryDirectory directory;
  private final TroupeProcess server;
  private final ConcurrentLinkedQueue<HttpConnection> idle = new ConcurrentLinkedQueue<>();

  private RestSmallBank(TemporaryDirectory directory, TroupeProcess server) {
    this.directory = directory;
    this.server = server;
  }

  /**
   * Starts a server whose Branch type has admission {@code policy}, defines the type and loads
   * every customer with {@code openingBalance} in each account, {@code concurrency} branches at a
   * time.
   */
  static RestSmallBank start(String policy, SmallBankWorkload.Shape shape, long openingBalance,
      int concurrency) throws Exception {
    TemporaryDirectory directory = TemporaryDirectory.create("smallbank-rest-" + policy);
    TroupeProcess server = null;
    try {
      server = TroupeProcess.start(directory.resolve("data"), directory.resolve("server.log"),
          List.of(), List.of(FIXED_ADMISSION));
      server.awaitHealthy(START_TIMEOUT);
      RestSmallBank bank = new RestSmallBank(directory, server);
      JsonNode type = SpecParser.parse("Branch",
          TroupeSmallBank.BRANCH_SPEC.formatted(policy).getBytes(StandardCharsets.UTF_8), true)
          .toJson();
      bank.expect200("PUT /v1/types/Branch",
          bank.send("PUT", "/v1/types/Branch", Json.writeBytes(type)));
      bank.load(shape, openingBalance, concurrency);
      return bank;
    } catch (Exception | Error e) {
      if (server != null) {
        server.close();
      }
      directory.close();
      throw e;
    }
  }

  private void load(SmallBankWorkload.Shape shape, long openingBalance, int concurrency)
      throws Exception {
    ObjectNode accounts = Json.NODES.objectNode();
    for (int index = 0; index < shape.customersPerBranch(); index++) {
      accounts.put(ActionSpec.MemberBinding.memberKey("checking", "c" + index), openingBalance);
      accounts.put(ActionSpec.MemberBinding.memberKey("savings", "c" + index), openingBalance);
    }
    byte[] body = Json.writeBytes(accounts);
    AtomicInteger next = new AtomicInteger();
    int loaders = Math.max(1, Math.min(concurrency, 16));
    ExecutorService executor = Executors.newFixedThreadPool(loaders);
    try (var progress = ProgressBars.start("load troupe over REST", shape.branches(),
        "branches", 1)) {
      List<Future<Object>> loaded = new java.util.ArrayList<>();
      for (int loader = 0; loader < loaders; loader++) {
        loaded.add(executor.submit(() -> {
          for (int branch = next.getAndIncrement(); branch < shape.branches();
              branch = next.getAndIncrement()) {
            expect200("PATCH " + path(branch), send("PATCH", path(branch), body));
            progress.step();
          }
          return null;
        }));
      }
      for (Future<Object> each : loaded) {
        each.get();
      }
    } finally {
      executor.shutdownNow();
    }
  }

  /** The server process's CPU (for the report's per-side CPU). */
  CpuMeter cpu() {
    return CpuMeter.process(server.pid(), "Troupe server process");
  }

  /** The server's lock-conflict retries so far (its /metrics). */
  long lockConflictRetries() {
    try {
      HttpConnection.Response metrics = send("GET", "/metrics", null);
      Matcher matcher = CONFLICT_RETRIES.matcher(metrics.text());
      return metrics.status() == 200 && matcher.find() ? Long.parseLong(matcher.group(1)) : 0;
    } catch (IOException unanswered) {
      throw new BenchmarkException("the Troupe server's /metrics did not answer: "
          + unanswered.getMessage(), unanswered);
    }
  }

  /** The sum of every account, read branch by branch. */
  long totalMoney(SmallBankWorkload.Shape shape) {
    long total = 0;
    for (int branch = 0; branch < shape.branches(); branch++) {
      JsonNode state = read(branch).path("state");
      for (String family : List.of("checking", "savings")) {
        for (JsonNode value : state.path(family)) {
          total += value.asLong();
        }
      }
    }
    return total;
  }

  /** This server driven with {@code mode} for multi-entity transactions. */
  SmallBankTarget view(TransactionRequest.Mode mode) {
    String modeName = mode.name().toLowerCase(java.util.Locale.ROOT);
    return transaction -> execute(transaction, modeName);
  }

  private SmallBankTarget.Outcome execute(SmallBankWorkload.Transaction transaction, String mode)
      throws IOException {
    return switch (transaction) {
      case SmallBankWorkload.Balance balance -> {
        JsonNode state = readAccounts(balance.customer()).path("state");
        member(state, "checking", balance.customer());
        member(state, "savings", balance.customer());
        yield SmallBankTarget.Outcome.COMMITTED;
      }
      case SmallBankWorkload.DepositChecking deposit ->
          invoke(deposit.customer(), "depositChecking", deposit.amount());
      case SmallBankWorkload.TransactSavings savings ->
          invoke(savings.customer(), "transactSavings", savings.amount());
      case SmallBankWorkload.WriteCheck check ->
          invoke(check.customer(), "writeCheck", check.amount());
      case SmallBankWorkload.SendPayment payment -> {
        ArrayNode operations = Json.NODES.arrayNode();
        operations.add(operation(payment.from(), "withdrawChecking",
            amountArgs(payment.from(), payment.amount())));
        operations.add(operation(payment.to(), "depositChecking",
            amountArgs(payment.to(), payment.amount())));
        yield transact(operations, mode);
      }
      case SmallBankWorkload.MultiTransfer transfer -> {
        ArrayNode operations = Json.NODES.arrayNode();
        for (SmallBankWorkload.Customer source : transfer.sources()) {
          operations.add(operation(source, "withdrawChecking",
              amountArgs(source, transfer.debitPerSource())));
        }
        for (SmallBankWorkload.Customer destination : transfer.destinations()) {
          operations.add(operation(destination, "depositChecking",
              amountArgs(destination, transfer.creditPerDestination())));
        }
        yield transact(operations, mode);
      }
      case SmallBankWorkload.Amalgamate amalgamate -> amalgamate(amalgamate, mode);
    };
  }

  private SmallBankTarget.Outcome amalgamate(SmallBankWorkload.Amalgamate amalgamate,
      String mode) throws IOException {
    for (int attempt = 1; ; attempt++) {
      JsonNode state = readAccounts(amalgamate.from()).path("state");
      long checking = member(state, "checking", amalgamate.from());
      long savings = member(state, "savings", amalgamate.from());
      ObjectNode close = customerArgs(amalgamate.from());
      close.put("checkingSeen", checking);
      close.put("savingsSeen", savings);
      ArrayNode operations = Json.NODES.arrayNode();
      operations.add(operation(amalgamate.from(), "close", close));
      if (checking + savings != 0) {
        operations.add(operation(amalgamate.to(), "adjustChecking",
            amountArgs(amalgamate.to(), checking + savings)));
      }
      SmallBankTarget.Outcome outcome = transact(operations, mode);
      // close's preconditions only compare with what was read: refused means "changed since".
      if (outcome == SmallBankTarget.Outcome.REJECTED
          && attempt < TroupeSmallBank.MAX_AMALGAMATE_ATTEMPTS) {
        continue;
      }
      return outcome == SmallBankTarget.Outcome.REJECTED
          ? SmallBankTarget.Outcome.ABORTED : outcome;
    }
  }

  private SmallBankTarget.Outcome invoke(SmallBankWorkload.Customer customer, String action,
      long amount) throws IOException {
    String path = path(customer.branch()) + "/actions/" + action + "?state=none";
    return outcomeOf(path, send("POST", path, Json.writeBytes(amountArgs(customer, amount))));
  }

  private SmallBankTarget.Outcome transact(ArrayNode operations, String mode) throws IOException {
    ObjectNode request = Json.NODES.objectNode();
    request.put("mode", mode);
    request.set("ops", operations);
    return outcomeOf("/v1/transactions",
        send("POST", "/v1/transactions", Json.writeBytes(request)));
  }

  /** A refused precondition is the transaction's own verdict; a lost conflict is an abort. */
  private static SmallBankTarget.Outcome outcomeOf(String what, HttpConnection.Response response) {
    if (response.status() == 200) {
      return SmallBankTarget.Outcome.COMMITTED;
    }
    JsonNode error = response.body().length == 0 ? Json.NODES.objectNode()
        : Json.parse(response.body());
    String code = error.path("error").asText();
    if (code.equals("precondition_failed")
        || code.equals("aborted") && error.path("reason").asText().equals("precondition_failed")) {
      return SmallBankTarget.Outcome.REJECTED;
    }
    if (code.equals("aborted")) {
      return SmallBankTarget.Outcome.ABORTED;
    }
    throw new BenchmarkException("POST " + what + " answered " + response.status() + ": "
        + response.text()); // unavailable, outcome_unknown, invalid: the run is broken
  }

  private JsonNode read(int branch) {
    try {
      HttpConnection.Response response = send("GET", path(branch), null);
      expect200("GET " + path(branch), response);
      return Json.parse(response.body());
    } catch (IOException e) {
      throw new BenchmarkException("GET " + path(branch) + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * The customer's two accounts, {@code {"state":{"checking":{"cN":..},"savings":{"cN":..}}}}: a
   * projection of the branch on its two members, both from one committed state.
   */
  private JsonNode readAccounts(SmallBankWorkload.Customer customer) {
    String path = path(customer.branch()) + "?key=checking%5Bc" + customer.index()
        + "%5D&key=savings%5Bc" + customer.index() + "%5D";
    try {
      HttpConnection.Response response = send("GET", path, null);
      expect200("GET " + path, response);
      return Json.parse(response.body());
    } catch (IOException e) {
      throw new BenchmarkException("GET " + path + " failed: " + e.getMessage(), e);
    }
  }

  private static long member(JsonNode state, String family, SmallBankWorkload.Customer customer) {
    JsonNode value = state.path(family).path("c" + customer.index());
    if (!value.isIntegralNumber()) {
      throw new BenchmarkException("the read of " + family + "[c" + customer.index()
          + "] answered no number: " + state);
    }
    return value.asLong();
  }

  private static ObjectNode operation(SmallBankWorkload.Customer customer, String action,
      ObjectNode args) {
    ObjectNode operation = Json.NODES.objectNode();
    operation.put("entity", "Branch/b" + customer.branch());
    operation.put("action", action);
    operation.set("args", args);
    return operation;
  }

  private static ObjectNode customerArgs(SmallBankWorkload.Customer customer) {
    ObjectNode args = Json.NODES.objectNode();
    args.put("customer", "c" + customer.index());
    return args;
  }

  private static ObjectNode amountArgs(SmallBankWorkload.Customer customer, long amount) {
    ObjectNode args = customerArgs(customer);
    args.put("amount", amount);
    return args;
  }

  private static String path(int branch) {
    return "/v1/entities/Branch/b" + branch;
  }

  private void expect200(String what, HttpConnection.Response response) {
    if (response.status() != 200) {
      throw new BenchmarkException(what + " answered " + response.status() + ": "
          + response.text());
    }
  }

  /** One request on a pooled connection; a connection that failed is not returned. */
  private HttpConnection.Response send(String method, String path, byte[] body)
      throws IOException {
    HttpConnection connection = idle.poll();
    if (connection == null) {
      connection = server.connect();
    }
    HttpConnection.Response response = connection.send(method, path, body);
    idle.add(connection);
    return response;
  }

  @Override
  public void close() {
    HttpConnection connection;
    while ((connection = idle.poll()) != null) {
      connection.close();
    }
    server.close();
    directory.close();
  }
}
