package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Json;
import dev.troupe.storage.postgres.PostgresInstance;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code troupe bench bank --nodes N}: the bank's sync scenarios (BankBenchmark's workload: a
 * {@code Transfer.book} transaction over a new Transfer entity and two accounts) through a data
 * centre of N server processes, the two accounts of every booking on DIFFERENT nodes, optionally
 * with a delay on every link between the nodes (a {@code LoopbackProxy} in front of each member's
 * Artery port), so that PSAC's and 2PC's prepares, votes and decisions cross the network.
 *
 * <p><b>Fair because</b> both policies run on the same cluster at the same time of the run, as two
 * pairs of types differing only in {@code psac.maxInFlight} ({@code Account}: the PSAC setting,
 * {@code Account2pc}: 1, plain 2PC), with the same number of accounts opened the same way; rounds
 * alternate between them (AlternatingComparison); every client thread keeps one connection to one
 * node (spread round-robin) and sends {@code POST /v1/transactions} with the booking.
 */
final class ClusterBank {
  private static final long OPENING_BALANCE = 1_000_000;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(180);
  private static final Duration TYPE_PROPAGATION_TIMEOUT = Duration.ofSeconds(30);

  private ClusterBank() {}

  /** What the bank benchmark's options ask of a run on several nodes. */
  record Options(List<String> scenarios, List<String> policies, String mode, int maxInFlight,
      int maxOvertakes, Integer accountsOverride, int nodes, long linkDelayMillis,
      int partitions, String heap, boolean sharedPostgres,
      AlternatingComparison.Settings settings) {}

  static BenchReport run(Options options) throws Exception {
    BenchReport report = new BenchReport("bank", "PSAC vs plain 2PC (psac.maxInFlight = 1) on the"
        + " bank's sync scenarios through " + options.nodes() + " nodes, the accounts of every"
        + " booking on different nodes, links delayed by " + options.linkDelayMillis() + " ms");
    options.settings().describe(report);
    report.parameter("psac_max_in_flight", options.maxInFlight())
        .parameter("max_overtakes", options.maxOvertakes())
        .parameter("client", "REST, POST /v1/transactions")
        .parameter("mode", options.mode())
        .parameter("nodes", options.nodes())
        .parameter("link_delay_millis", options.linkDelayMillis())
        .parameter("partitions", options.partitions())
        .parameter("heap", options.heap())
        .parameter("storage", options.sharedPostgres() ? "one PostgreSQL database"
            : "a RocksDB store per node")
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", ClusterBenchmark.loadAverage());
    for (String scenario : options.scenarios()) {
      if (scenario.equals("nosync")) {
        throw new IllegalArgumentException("--nodes runs the sync scenarios only (sync,"
            + " sync1000, sync10): nosync has no participants to spread over nodes");
      }
    }
    List<String> settings = List.of("troupe.storage.partitions=" + options.partitions(),
        "troupe.storage.postgres.maximum-pool-size=" + (3 * options.partitions() + 16));
    try (TemporaryDirectory work = TemporaryDirectory.create("bank-cluster");
        PostgresInstance postgres = options.sharedPostgres()
            ? PostgresInstance.startForTroupe(128) : null) {
      String jdbcUrl = null;
      if (postgres != null) {
        postgres.createDatabase("bank");
        jdbcUrl = postgres.jdbcUrl("bank");
      }
      try (LocalCluster cluster = LocalCluster.start(options.nodes(), work.resolve("cluster"),
          jdbcUrl, List.of("-Xmx" + options.heap()), settings, options.linkDelayMillis())) {
        cluster.awaitHealthy(START_TIMEOUT);
        Map<Integer, Integer> placement =
            cluster.awaitPlacement(options.partitions(), true, START_TIMEOUT);
        report.parameter("placement_partition_to_node", placement.toString());
        List<TroupeProcess> members = new ArrayList<>();
        for (int i = 0; i < options.nodes(); i++) {
          members.add(cluster.member(i));
        }
        for (String scenario : options.scenarios()) {
          for (String policy : options.policies()) {
            // On one shared store a type declared through one node is the data centre's; on a
            // store per node every node needs it.
            for (TroupeProcess member : options.sharedPostgres() ? members.subList(0, 1)
                : members) {
              declare(member, policy, scenario,
                  policy.equals("psac") ? options.maxInFlight() : 1, options.maxOvertakes());
            }
          }
          int accounts = options.accountsOverride() != null ? options.accountsOverride()
              : BankBenchmark.accountsOf(scenario);
          report.parameter(scenario + "_accounts", accounts);
          List<Bank> banks = new ArrayList<>();
          for (String policy : options.policies()) {
            Bank bank = new Bank(scenario + "/" + policy, accountType(policy, scenario),
                transferType(policy, scenario), accounts, members, placement, options);
            bank.open();
            banks.add(bank);
          }
          Map<String, AlternatingComparison.Outcome> outcomes = AlternatingComparison.run(
              "bank " + scenario, options.settings(), new ArrayList<>(banks), report);
          for (Bank bank : banks) {
            bank.report(report, outcomes.get(bank.name()));
          }
          if (banks.size() == 2) {
            report.ratio("psac / 2pc committed throughput, " + scenario + ", "
                    + options.nodes() + " nodes",
                banks.get(0).committedPerSecond(outcomes.get(banks.get(0).name())),
                banks.get(1).committedPerSecond(outcomes.get(banks.get(1).name())),
                BankBenchmark.goalOf(scenario));
          }
        }
        report.parameter("load_average_at_end", ClusterBenchmark.loadAverage());
      }
    }
    return report;
  }

  /** Each scenario and policy has types of its own, e.g. Sync1000Account2pc: fresh accounts. */
  private static String accountType(String policy, String scenario) {
    return typePrefix(scenario) + "Account" + (policy.equals("psac") ? "" : "2pc");
  }

  private static String transferType(String policy, String scenario) {
    return typePrefix(scenario) + "Transfer" + (policy.equals("psac") ? "" : "2pc");
  }

  private static String typePrefix(String scenario) {
    return Character.toUpperCase(scenario.charAt(0)) + scenario.substring(1);
  }

  /** Declares the policy's account and transfer types (BankBenchmark's specs) over REST. */
  private static void declare(TroupeProcess server, String policy, String scenario,
      int maxInFlight, int maxOvertakes) throws IOException {
    String account = accountType(policy, scenario);
    String transfer = transferType(policy, scenario);
    String accountSpec = BankBenchmark.ACCOUNT_SPEC.formatted(maxInFlight, maxOvertakes)
        .replace("type: Account", "type: " + account);
    String transferSpec = BankBenchmark.TRANSFER_SPEC
        .replace("type: Transfer", "type: " + transfer)
        .replace("Account/", account + "/");
    YAMLMapper yaml = new YAMLMapper();
    try (HttpConnection connection = server.connect()) {
      for (Map.Entry<String, String> type : Map.of(account, accountSpec, transfer, transferSpec)
          .entrySet()) {
        byte[] json = Json.writeBytes(yaml.readTree(type.getValue()));
        HttpConnection.Response answer = connection.put("/v1/types/" + type.getKey(), json);
        if (answer.status() != 200) {
          throw new BenchmarkException("declaring " + type.getKey() + " answered "
              + answer.status() + ": " + answer.text());
        }
      }
    }
  }

  /** One policy's accounts on the cluster, and the load that books between them. */
  private static final class Bank implements AlternatingComparison.Contender {
    private final String name;
    private final String accountType;
    private final String transferType;
    private final int accounts;
    private final List<TroupeProcess> members;
    private final Options options;
    /** Per node id, the accounts whose partition it hosts: a booking takes two nodes' accounts. */
    private final Map<Integer, List<Integer>> accountsByNode = new TreeMap<>();
    private final LongAdder committed = new LongAdder();
    private final LongAdder preconditionFailures = new LongAdder();
    private final LongAdder lockConflicts = new LongAdder();
    private final LongAdder otherAborts = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final Map<String, LongAdder> errorsByCode = new java.util.concurrent.ConcurrentHashMap<>();

    Bank(String name, String accountType, String transferType, int accounts,
        List<TroupeProcess> members, Map<Integer, Integer> placement, Options options) {
      this.name = name;
      this.accountType = accountType;
      this.transferType = transferType;
      this.accounts = accounts;
      this.members = members;
      this.options = options;
      for (int i = 0; i < accounts; i++) {
        int partition = EntityLocator.partitionOf(new EntityId(accountType, "a" + i),
            options.partitions());
        accountsByNode.computeIfAbsent(placement.get(partition), node -> new ArrayList<>())
            .add(i);
      }
      if (accountsByNode.size() < 2) {
        throw new BenchmarkException("the accounts of " + name + " are all on one node");
      }
    }

    @Override
    public String name() {
      return name;
    }

    /** Opens every account, through the nodes in turn. */
    void open() throws Exception {
      List<Thread> openers = new ArrayList<>();
      java.util.concurrent.atomic.AtomicReference<String> failure =
          new java.util.concurrent.atomic.AtomicReference<>();
      int threads = 8;
      for (int t = 0; t < threads; t++) {
        int first = t;
        openers.add(Thread.ofPlatform().start(() -> {
          try (HttpConnection connection = members.get(first % members.size()).connect()) {
            for (int i = first; i < accounts && failure.get() == null; i += threads) {
              HttpConnection.Response answer = openAccount(connection, i);
              if (answer.status() != 200) {
                failure.compareAndSet(null, "opening " + accountType + "/a" + i + " answered "
                    + answer.status() + ": " + answer.text());
              }
            }
          } catch (IOException e) {
            failure.compareAndSet(null, "opening accounts: " + e);
          }
        }));
      }
      for (Thread opener : openers) {
        opener.join();
      }
      if (failure.get() != null) {
        throw new BenchmarkException(failure.get());
      }
    }

    /**
     * Opens account {@code i}; while the node has not heard of the type yet (another node
     * declared it and this one refreshes its types from the shared store), waits and retries.
     */
    private HttpConnection.Response openAccount(HttpConnection connection, int i)
        throws IOException {
      long deadline = System.nanoTime() + TYPE_PROPAGATION_TIMEOUT.toNanos();
      while (true) {
        HttpConnection.Response answer = connection.send("POST", "/v1/entities/"
            + accountType + "/a" + i + "/actions/open",
            ("{\"initial\": " + OPENING_BALANCE + "}").getBytes(StandardCharsets.UTF_8));
        if (answer.status() != 404 || System.nanoTime() > deadline) {
          return answer;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return answer;
        }
      }
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      HttpConnection[] connections = new HttpConnection[workers];
      for (int worker = 0; worker < workers; worker++) {
        connections[worker] = members.get(worker % members.size()).connect();
      }
      LongAdder[] lastAnswer = new LongAdder[workers];
      List<Integer> nodes = new ArrayList<>(accountsByNode.keySet());
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) {
          ThreadLocalRandom random = ThreadLocalRandom.current();
          int fromNode = random.nextInt(nodes.size());
          int toNode = (fromNode + 1 + random.nextInt(nodes.size() - 1)) % nodes.size();
          List<Integer> fromAccounts = accountsByNode.get(nodes.get(fromNode));
          List<Integer> toAccounts = accountsByNode.get(nodes.get(toNode));
          ObjectNode args = Json.NODES.objectNode();
          args.put("from", "a" + fromAccounts.get(random.nextInt(fromAccounts.size())));
          args.put("to", "a" + toAccounts.get(random.nextInt(toAccounts.size())));
          args.put("amount", 1 + random.nextInt(100));
          ObjectNode operation = Json.NODES.objectNode();
          operation.put("entity", transferType + "/t" + worker + "-" + System.nanoTime());
          operation.put("action", "book");
          operation.set("args", args);
          ObjectNode request = Json.NODES.objectNode();
          request.put("mode", options.mode());
          request.putArray("ops").add(operation);
          try {
            HttpConnection.Response answer =
                connections[worker].send("POST", "/v1/transactions", Json.writeBytes(request));
            if (answer.status() == 200) {
              lastAnswer[worker] = committed;
              return;
            }
            JsonNode body = Json.parse(answer.body());
            String code = body.path("error").asText("");
            String reason = body.path("reason").asText("");
            lastAnswer[worker] = switch (code) {
              case "precondition_failed" -> preconditionFailures;
              case "aborted" -> switch (reason) {
                case "precondition_failed" -> preconditionFailures;
                case "lock_conflict" -> lockConflicts;
                default -> otherAborts;
              };
              default -> {
                errorsByCode.computeIfAbsent(answer.status() + " " + code,
                    ignored -> new LongAdder()).increment();
                yield errors;
              }
            };
          } catch (IOException | RuntimeException e) {
            errorsByCode.computeIfAbsent(e.getClass().getSimpleName(),
                ignored -> new LongAdder()).increment();
            lastAnswer[worker] = errors;
          }
        }

        @Override
        public void counted(int worker) {
          lastAnswer[worker].increment();
        }

        @Override
        public void close() {
          for (HttpConnection connection : connections) {
            connection.close();
          }
        }
      };
    }

    private long answered() {
      return committed.sum() + preconditionFailures.sum() + lockConflicts.sum()
          + otherAborts.sum() + errors.sum();
    }

    double committedPerSecond(AlternatingComparison.Outcome outcome) {
      long answered = answered();
      double committedShare = answered == 0 ? 0 : (double) committed.sum() / answered;
      return outcome.medianThroughput() * committedShare;
    }

    void report(BenchReport report, AlternatingComparison.Outcome outcome) throws IOException {
      report.result(name, "committed_per_second", committedPerSecond(outcome));
      for (int percentile : new int[] {50, 95, 99}) {
        report.result(name, "transaction_p" + percentile + "_milliseconds",
            outcome.latencyNanoseconds().getValueAtPercentile(percentile) / 1e6);
      }
      report.result(name, "precondition_failures", preconditionFailures.sum());
      report.result(name, "lock_conflict_aborts", lockConflicts.sum());
      report.result(name, "other_aborts", otherAborts.sum());
      report.result(name, "errors", errors.sum());
      if (errors.sum() > 0) {
        report.parameter(name.replace('/', '_') + "_errors", errorsByCode.toString());
      }
      long answered = answered();
      report.result(name, "abort_rate", answered == 0 ? 0
          : (double) (answered - committed.sum()) / answered);
      long total = 0;
      try (HttpConnection connection = members.get(0).connect()) {
        for (int i = 0; i < accounts; i++) {
          HttpConnection.Response answer =
              connection.get("/v1/entities/" + accountType + "/a" + i);
          if (answer.status() != 200) {
            report.failure(name + ": reading " + accountType + "/a" + i + " answered "
                + answer.status() + ": " + answer.text());
            return;
          }
          total += Json.parse(answer.body()).path("state").path("balance").asLong();
        }
      }
      report.result(name, "money_total", total);
      if (total != accounts * OPENING_BALANCE) {
        report.failure(name + ": money is not conserved: the accounts hold " + total
            + ", they were opened with " + accounts * OPENING_BALANCE);
      }
    }
  }
}
