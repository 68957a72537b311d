package dev.troupe.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.TransactionMetrics;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench bank}: the PSAC paper's synchronization experiments (psac.txt §4.4), PSAC
 * against plain two-phase commit, on the same engine in the same run.
 *
 * <ul>
 *   <li><b>nosync</b>: open new accounts (an action without sync calls);
 *   <li><b>sync</b>: {@code Transfer.book} between two accounts picked uniformly from 100,000 (a
 *       transaction over a new Transfer entity and the two accounts, through sync calls);
 *   <li><b>sync1000</b>: the same among 1,000 accounts (contention);
 *   <li><b>sync10</b>: the same among 10 accounts: the paper's "single or few participants ...
 *       required for the rest of the system to make progress" (psac.txt §1), where every account
 *       has several bookings in flight, so 2PC blocks them for its decision's round trips and
 *       PSAC admits them (not in the default set; add it with {@code --scenario}).
 * </ul>
 *
 * <p><b>Fair</b>: both policies are the same code with the same type, differing only in {@code
 * psac.maxInFlight}: 1 is plain 2PC (one action in progress per account, others wait or die), as
 * in the paper; PSAC admits up to {@code --max-in-flight}. Each policy has its own engine (a fresh
 * data directory, the same settings and preloaded accounts); rounds alternate between them; the
 * client is the embedded API, so the HTTP stack (the same for both) does not dilute the
 * difference on this 2-core machine. Throughput counts committed bookings; aborts are reported.
 * After the run, money is checked: the balances of every account must add up to what was opened.
 */
@Command(
    name = "bank",
    mixinStandardHelpOptions = true,
    description = "PSAC vs plain 2PC on the PSAC paper's bank scenarios (nosync, sync, sync1000;"
        + " sync10 on request). Goals: psac / 2pc >= 3 on sync1000 and sync10, >= 0.95 on the"
        + " others.")
final class BankBenchmark extends Benchmark {
  static final Goal CONTENDED_GOAL = Goal.atLeast(3);
  static final Goal UNCONTENDED_GOAL = Goal.atLeast(0.95);

  /** The accounts a sync scenario books between (without --accounts). */
  static int accountsOf(String scenario) {
    return switch (scenario) {
      case "sync" -> 100_000;
      case "sync10" -> 10;
      default -> 1_000;
    };
  }

  /** The PSAC / 2PC goal of a scenario: the contended ones (few accounts) must gain. */
  static Goal goalOf(String scenario) {
    return scenario.equals("sync1000") || scenario.equals("sync10") ? CONTENDED_GOAL
        : UNCONTENDED_GOAL;
  }
  private static final long OPENING_BALANCE = 1_000_000;

  static final String ACCOUNT_SPEC = """
      type: Account
      admission: psac
      psac: {maxInFlight: %d, maxOvertakes: %d}
      keys:
        balance: {kind: register, default: 0}
        status:  {kind: register, default: "new"}
      actions:
        open:     {params: {initial: int}, pre: ["status == 'new'", "initial >= 0"],
                   effect: {status: "'open'", balance: "initial"}}
        withdraw: {params: {amount: int}, pre: ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                   effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["status == 'open'", "amount > 0"],
                   effect: {balance: "balance + amount"}}
      """;
  static final String TRANSFER_SPEC = """
      type: Transfer
      actions:
        book: {params: {from: string, to: string, amount: int},
               sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                      {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
      """;

  @Option(names = "--scenario", defaultValue = "nosync,sync,sync1000", split = ",",
      description = "Scenarios, comma-separated: nosync, sync, sync1000, sync10 (default:"
          + " ${DEFAULT-VALUE}).")
  List<String> scenarios;

  @Option(names = "--policy", defaultValue = "both",
      description = "psac, 2pc or both (default: ${DEFAULT-VALUE}).")
  String policy;

  @Option(names = "--mode", defaultValue = "planned",
      description = "How bookings are scheduled: planned (ordered by the sequencer, never retried)"
          + " or dynamic (wait-die, retried) (default: ${DEFAULT-VALUE}).")
  String mode;

  @Option(names = "--threads", defaultValue = "128",
      description = "Concurrent closed-loop clients (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--max-in-flight", defaultValue = "8",
      description = "psac.maxInFlight of the PSAC policy (default: ${DEFAULT-VALUE}).")
  int maxInFlight;

  @Option(names = "--max-overtakes", defaultValue = "32",
      description = "psac.maxOvertakes of both policies (default: ${DEFAULT-VALUE}).")
  int maxOvertakes;

  @Option(names = "--accounts", paramLabel = "N",
      description = "Override the accounts of sync (100000), sync1000 (1000) and sync10 (10).")
  Integer accountsOverride;

  @Option(names = "--nodes", defaultValue = "1",
      description = "1: the embedded engine; more: a data centre of that many server processes"
          + " (sync scenarios over REST, the two accounts of every booking on different nodes)"
          + " (default: ${DEFAULT-VALUE}).")
  int nodes;

  @Option(names = "--link-delay-millis", defaultValue = "0",
      description = "With --nodes: delay of every message between two nodes, one way, by a proxy"
          + " in front of each node's cluster port (default: ${DEFAULT-VALUE}).")
  long linkDelayMillis;

  @Option(names = "--cluster-storage", defaultValue = "postgres",
      description = "With --nodes: postgres, the one shared database a cluster runs on"
          + " (default: ${DEFAULT-VALUE}).")
  String clusterStorage;

  @Option(names = "--partitions", defaultValue = "12",
      description = "With --nodes: storage partitions (default: ${DEFAULT-VALUE}).")
  int partitions;

  @Option(names = "--heap", defaultValue = "320m",
      description = "With --nodes: maximum heap of every node (default: ${DEFAULT-VALUE}).")
  String heap;

  @Mixin HtmlReportOption htmlReport;

  @Mixin AlternationOptions alternation;

  @Override
  void afterPrint(BenchReport report) {
    htmlReport.write(report, HtmlReport.Layout.BANK);
  }

  @Override
  BenchReport run() throws Exception {
    List<String> policies = switch (policy) {
      case "both" -> List.of("psac", "2pc");
      case "psac", "2pc" -> List.of(policy);
      default -> throw new IllegalArgumentException("--policy must be psac, 2pc or both");
    };
    for (String scenario : scenarios) {
      if (!List.of("nosync", "sync", "sync1000", "sync10").contains(scenario)) {
        throw new IllegalArgumentException("unknown scenario '" + scenario
            + "'; use nosync, sync, sync1000 or sync10");
      }
    }
    TransactionRequest.Mode transactionMode = switch (mode) {
      case "planned" -> TransactionRequest.Mode.PLANNED;
      case "dynamic" -> TransactionRequest.Mode.DYNAMIC;
      default -> throw new IllegalArgumentException("--mode must be planned or dynamic");
    };
    AlternatingComparison.Settings settings = alternation.settings(threads);
    if (nodes > 1) {
      if (!clusterStorage.equals("postgres") || linkDelayMillis < 0 || partitions < nodes) {
        throw new IllegalArgumentException("--cluster-storage must be postgres (a cluster's"
            + " members share one store), --link-delay-millis at least 0 and --partitions at"
            + " least --nodes");
      }
      return ClusterBank.run(new ClusterBank.Options(scenarios, policies, mode, maxInFlight,
          maxOvertakes, accountsOverride, nodes, linkDelayMillis, partitions, heap,
          clusterStorage.equals("postgres"), settings));
    }
    if (linkDelayMillis != 0) {
      throw new IllegalArgumentException("--link-delay-millis needs --nodes 2 or more");
    }
    BenchReport report = new BenchReport("bank",
        "PSAC vs plain 2PC (psac.maxInFlight = 1) on the PSAC paper's bank scenarios");
    settings.describe(report);
    report.parameter("psac_max_in_flight", maxInFlight)
        .parameter("max_overtakes", maxOvertakes)
        .parameter("client", "embedded API")
        .parameter("mode", mode);
    for (String scenario : scenarios) {
      int accounts = scenario.equals("nosync") ? 0
          : accountsOverride != null ? accountsOverride
          : accountsOf(scenario);
      report.parameter(scenario + "_accounts", accounts);
      List<Bank> banks = new ArrayList<>();
      try {
        for (String name : policies) {
          banks.add(Bank.open(scenario + "/" + name, scenario,
              name.equals("psac") ? maxInFlight : 1, maxOvertakes, accounts, threads,
              transactionMode));
        }
        Map<String, AlternatingComparison.Outcome> outcomes =
            AlternatingComparison.run("bank " + scenario, settings,
                new ArrayList<>(banks), report);
        for (Bank bank : banks) {
          bank.report(report, outcomes.get(bank.name()));
        }
        if (banks.size() == 2) {
          AlternatingComparison.Outcome psac = outcomes.get(banks.get(0).name());
          AlternatingComparison.Outcome twoPhase = outcomes.get(banks.get(1).name());
          double psacCommitted = banks.get(0).committedPerSecond(psac);
          double twoPhaseCommitted = banks.get(1).committedPerSecond(twoPhase);
          // The rounds' own ratios, scaled by the sides' committed shares like the medians.
          Spread spread = Spread.ofRatios(psac.throughputs(), twoPhase.throughputs())
              .scaled((psacCommitted / psac.medianThroughput())
                  / (twoPhaseCommitted / twoPhase.medianThroughput()));
          report.ratio("psac / 2pc committed throughput, " + scenario, psacCommitted,
              twoPhaseCommitted, goalOf(scenario), spread);
        }
      } finally {
        for (Bank bank : banks) {
          bank.close();
        }
      }
    }
    return report;
  }

  /** One policy's engine with its accounts, and the load that books on it. */
  private static final class Bank implements AlternatingComparison.Contender, AutoCloseable {
    private final String name;
    private final String scenario;
    private final int accounts;
    private final TemporaryDirectory directory;
    private final Troupe troupe;
    private final LongAdder committed = new LongAdder();
    private final LongAdder preconditionFailures = new LongAdder();
    private final LongAdder lockConflicts = new LongAdder();
    private final LongAdder otherAborts = new LongAdder();
    private final TransactionRequest.Mode mode;

    private Bank(String name, String scenario, int accounts, TemporaryDirectory directory,
        Troupe troupe, TransactionRequest.Mode mode) {
      this.mode = mode;
      this.name = name;
      this.scenario = scenario;
      this.accounts = accounts;
      this.directory = directory;
      this.troupe = troupe;
    }

    static Bank open(String name, String scenario, int maxInFlight, int maxOvertakes,
        int accounts, int threads, TransactionRequest.Mode mode) throws Exception {
      TemporaryDirectory directory = TemporaryDirectory.create("bank-" + name.replace('/', '-'));
      Troupe troupe = null;
      try {
        troupe = Troupe.open(RuntimeSettings.forDirectory(directory.resolve("data")));
        troupe.defineType(SpecParser.parse("Account",
            ACCOUNT_SPEC.formatted(maxInFlight, maxOvertakes).getBytes(StandardCharsets.UTF_8),
            true)).join();
        troupe.defineType(SpecParser.parse("Transfer",
            TRANSFER_SPEC.getBytes(StandardCharsets.UTF_8), true)).join();
        Bank bank = new Bank(name, scenario, accounts, directory, troupe, mode);
        bank.openAccounts(threads);
        return bank;
      } catch (Exception | Error e) {
        if (troupe != null) {
          troupe.close();
        }
        directory.close();
        throw e;
      }
    }

    private void openAccounts(int concurrency) throws InterruptedException {
      try (var progress = ProgressBars.start("open " + name, accounts, "accounts", 1)) {
        BoundedSubmission.run(accounts, concurrency, progress,
            i -> troupe.invoke(new EntityId("Account", "a" + i), "open", initial()));
      }
    }

    private static ObjectNode initial() {
      ObjectNode params = Json.NODES.objectNode();
      params.put("initial", OPENING_BALANCE);
      return params;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      // Each worker's last answer, counted if the harness says it was measured.
      LongAdder[] lastAnswer = new LongAdder[workers];
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) {
          CompletableFuture<?> operation;
          if (scenario.equals("nosync")) {
            operation = troupe.invoke(
                new EntityId("Account", "n" + worker + "-" + System.nanoTime() + "-" + sequence),
                "open", initial());
          } else {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            int from = random.nextInt(accounts);
            int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
            ObjectNode params = Json.NODES.objectNode();
            params.put("from", "a" + from);
            params.put("to", "a" + to);
            params.put("amount", 1 + random.nextInt(100));
            operation = troupe.transact(new TransactionRequest(List.of(
                new TransactionRequest.Operation(
                    new EntityId("Transfer", "t" + worker + "-" + System.nanoTime()),
                    new Turn.InvokeAction("book", params))), List.of(), mode));
          }
          try {
            operation.join();
            lastAnswer[worker] = committed;
          } catch (CompletionException e) {
            if (!(e.getCause() instanceof TroupeException error)) {
              throw e;
            }
            lastAnswer[worker] = switch (error.code()) {
              case PRECONDITION_FAILED -> preconditionFailures;
              case ABORTED -> switch (error.reason() == null ? "" : error.reason()) {
                case "precondition_failed" -> preconditionFailures;
                case "lock_conflict" -> lockConflicts;
                default -> otherAborts;
              };
              default -> throw e; // unavailable, outcome_unknown...: the run is broken
            };
          }
        }

        @Override
        public void counted(int worker) {
          lastAnswer[worker].increment();
        }

        @Override
        public void close() {}
      };
    }

    private long answered() {
      return committed.sum() + preconditionFailures.sum() + lockConflicts.sum()
          + otherAborts.sum();
    }

    /** The median answered throughput scaled by the share of answers that committed. */
    double committedPerSecond(AlternatingComparison.Outcome outcome) {
      long answered = answered();
      double committedShare = answered == 0 ? 0 : (double) committed.sum() / answered;
      return outcome.medianThroughput() * committedShare;
    }

    void report(BenchReport report, AlternatingComparison.Outcome outcome) {
      TransactionMetrics metrics = troupe.transactionMetrics();
      report.result(name, "committed_per_second", committedPerSecond(outcome));
      for (int percentile : new int[] {50, 95, 99}) {
        report.result(name, "transaction_p" + percentile + "_milliseconds",
            outcome.latencyNanoseconds().getValueAtPercentile(percentile) / 1e6);
      }
      report.result(name, "precondition_failures", preconditionFailures.sum());
      report.result(name, "lock_conflict_aborts", lockConflicts.sum());
      report.result(name, "other_aborts", otherAborts.sum());
      // Engine totals since it opened: every round, warm-up included.
      report.result(name, "wait_die_retries", metrics.lockConflictRetries());
      report.result(name, "psac_delays", metrics.psacDelays());
      long answered = answered();
      report.result(name, "abort_rate", answered == 0 ? 0
          : (double) (answered - committed.sum()) / answered);
      if (accounts > 0) {
        long total = 0;
        for (int i = 0; i < accounts; i++) {
          total += troupe.get(new EntityId("Account", "a" + i)).join().state().get("balance")
              .asLong();
        }
        report.result(name, "money_total", total);
        if (total != accounts * OPENING_BALANCE) {
          report.failure(name + ": money is not conserved: the accounts hold " + total
              + ", they were opened with " + accounts * OPENING_BALANCE);
        }
      }
    }

    @Override
    public void close() {
      troupe.close();
      directory.close();
    }
  }
}
