package dev.troupe.bench;

import dev.troupe.bench.postgres.PostgresSmallBank;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.storage.postgres.PostgresInstance;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench smallbank}: SmallBank (smsa.txt §4.2.2) on Troupe with key-level admission
 * ({@code keys}) against actor-level admission ({@code serial}), each with planned and dynamic
 * multi-entity transactions, and on PostgreSQL SERIALIZABLE with the same data and transactions,
 * all in one run on the same machine.
 *
 * <p><b>Fair</b>: every contender gets the same closed-loop clients, the same seeded sequence of
 * transactions per client and round, and durable commits (Troupe syncs its log before answering;
 * PostgreSQL runs with {@code fsync} and {@code synchronous_commit} on). Troupe is driven through
 * its embedded API and PostgreSQL through JDBC from the same JVM, each the way a JVM service would
 * use it; neither pays for HTTP. Troupe over REST ({@code rest-keys-planned}, issue 20) is the
 * path an application takes: a server process of its own driven over HTTP ({@link
 * RestSmallBank}), compared with PostgreSQL as well. Rounds alternate between contenders, their
 * order rotating, with a wait for an idle machine before each and each side's CPU reported
 * ({@link AlternatingComparison}). The two embedded Troupe engines (keys and serial) each serve
 * their planned and dynamic contenders, which share its data.
 *
 * <p><b>Counted</b>: a transaction is <i>completed</i> when it committed or its own logic refused
 * it (a payer short of money, which is SmallBank's defined behaviour), and <i>aborted</i> when the
 * system gave up on it after its retries. Throughput is completed transactions per second. After
 * every mix, money is checked per system: the accounts must add up to the opening money plus
 * every committed deposit and savings change minus every committed check (a check that overdraws
 * costs 1 more, so the sum may be lower by at most the number of checks).
 */
@Command(
    name = "smallbank",
    mixinStandardHelpOptions = true,
    description = "SmallBank: Troupe key-level vs actor-level admission, planned vs dynamic,"
        + " and PostgreSQL SERIALIZABLE. Goals: keys / serial >= 2.5 at actor skew 1%%;"
        + " Troupe / PostgreSQL >= 2.")
final class SmallBankBenchmark extends Benchmark {
  static final Goal KEYS_OVER_SERIAL_GOAL = Goal.atLeast(2.5);
  static final Goal TROUPE_OVER_POSTGRES_GOAL = Goal.atLeast(2);
  /** The Troupe contender compared with PostgreSQL. */
  static final String TROUPE_AGAINST_POSTGRES = "keys-planned";
  /** The actor skew at which the keys / serial goal is set (the 1%). */
  static final double GOAL_ACTOR_SKEW = 0.01;
  /**
   * Money in every account at the start: large against the amounts moved (at most a few hundred),
   * so that refusals stay rare and the run measures transactions, not empty accounts.
   */
  static final long OPENING_BALANCE = 1_000_000;
  /** The Troupe-over-REST contender compared with PostgreSQL. */
  static final String REST_AGAINST_POSTGRES = "rest-keys-planned";
  static final List<String> ALL_TARGETS = List.of("keys-planned", "keys-dynamic",
      "serial-planned", "serial-dynamic", "postgres", REST_AGAINST_POSTGRES);

  @Option(names = "--mix", defaultValue = "multitransfer,smallbank", split = ",",
      description = "Mixes, comma-separated: smallbank (the six transactions) and multitransfer"
          + " (Snapper's MultiTransfer alone) (default: ${DEFAULT-VALUE}).")
  List<String> mixes;

  @Option(names = "--targets", defaultValue = "keys-planned,keys-dynamic,serial-planned,"
      + "serial-dynamic,postgres,rest-keys-planned", split = ",",
      description = "Contenders, comma-separated: keys-planned, keys-dynamic, serial-planned,"
          + " serial-dynamic (Troupe embedded), postgres, rest-keys-planned (Troupe over REST,"
          + " a server process) (default: all).")
  List<String> targets;

  @Option(names = "--branches", defaultValue = "1000",
      description = "Branch entities (SmSa's numActor) (default: ${DEFAULT-VALUE}).")
  int branches;

  @Option(names = "--customers-per-branch", defaultValue = "100",
      description = "Customers per branch, two keys each (SmSa's actorSize counts keys)"
          + " (default: ${DEFAULT-VALUE}).")
  int customersPerBranch;

  @Option(names = "--actor-skew", defaultValue = "1", paramLabel = "PERCENT",
      description = "Share of hot branches in percent; 3/4 of picks fall on them; 100 is"
          + " uniform (default: ${DEFAULT-VALUE}).")
  double actorSkewPercent;

  @Option(names = "--key-skew", defaultValue = "100", paramLabel = "PERCENT",
      description = "Share of hot customers per branch in percent (default: ${DEFAULT-VALUE}).")
  double keySkewPercent;

  @Option(names = "--transaction-size", defaultValue = "1",
      description = "Customers a MultiTransfer touches per branch (SmSa's txnSize)"
          + " (default: ${DEFAULT-VALUE}).")
  int transactionSize;

  @Option(names = "--threads", defaultValue = "64",
      description = "Concurrent closed-loop clients (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--seed", defaultValue = "1",
      description = "Seed of the clients' transaction sequences (default: ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--postgres-shared-buffers-mb", defaultValue = "256",
      description = "PostgreSQL's shared_buffers in MB (default: ${DEFAULT-VALUE}).")
  int sharedBuffersMegabytes;

  @Mixin HtmlReportOption htmlReport;

  @Mixin AlternationOptions alternation;

  @Override
  BenchReport run() throws Exception {
    List<SmallBankWorkload.Mix> chosenMixes = new ArrayList<>();
    for (String mix : mixes) {
      chosenMixes.add(switch (mix) {
        case "smallbank" -> SmallBankWorkload.Mix.SMALLBANK;
        case "multitransfer" -> SmallBankWorkload.Mix.MULTITRANSFER;
        default -> throw new IllegalArgumentException(
            "unknown mix '" + mix + "'; use smallbank or multitransfer");
      });
    }
    for (String target : targets) {
      if (!ALL_TARGETS.contains(target)) {
        throw new IllegalArgumentException("unknown target '" + target + "'; use "
            + String.join(", ", ALL_TARGETS));
      }
    }
    SmallBankWorkload.Shape shape = new SmallBankWorkload.Shape(branches, customersPerBranch,
        actorSkewPercent / 100, keySkewPercent / 100, transactionSize);
    AlternatingComparison.Settings settings = alternation.settings(threads);
    int maxConflictRetries =
        dev.troupe.runtime.RuntimeSettings.load().transactions().maxLockConflictRetries();
    BenchReport report = new BenchReport("smallbank", "SmallBank: Troupe keys vs serial"
        + " admission, planned vs dynamic, and PostgreSQL SERIALIZABLE");
    settings.describe(report);
    report.parameter("branches", branches)
        .parameter("customers_per_branch", customersPerBranch)
        .parameter("actor_skew_percent", actorSkewPercent)
        .parameter("key_skew_percent", keySkewPercent)
        .parameter("transaction_size", transactionSize)
        .parameter("seed", seed)
        .parameter("max_conflict_retries", maxConflictRetries)
        .parameter("troupe_client", "embedded API (keys-*, serial-*); REST, one keep-alive"
            + " connection per client, to a server process (rest-keys-planned) with "
            + RestSmallBank.FIXED_ADMISSION)
        .parameter("postgres_client", "JDBC, pool of one connection per client");

    Map<String, Ledger> ledgers = new LinkedHashMap<>();
    Map<String, TroupeSmallBank> engines = new LinkedHashMap<>();
    PostgresInstance postgresServer = null;
    PostgresSmallBank postgres = null;
    RestSmallBank rest = null;
    try {
      if (targets.contains(REST_AGAINST_POSTGRES)) {
        rest = RestSmallBank.start("keys", shape, OPENING_BALANCE, threads);
        ledgers.put("troupe rest", new Ledger());
      }
      for (String policy : List.of("keys", "serial")) {
        if (targets.contains(policy + "-planned") || targets.contains(policy + "-dynamic")) {
          engines.put(policy, TroupeSmallBank.open(policy, shape, OPENING_BALANCE, threads));
          ledgers.put("troupe " + policy, new Ledger());
        }
      }
      if (targets.contains("postgres")) {
        postgresServer = PostgresInstance.start(sharedBuffersMegabytes);
        // PostgreSQL gives up after as many conflict retries as Troupe's dynamic transactions
        // (troupe.transactions.max-lock-conflict-retries), so "aborted" means the same on both.
        postgres = PostgresSmallBank.open(new PostgresSmallBank.Settings(
            postgresServer.jdbcUrl(), threads, maxConflictRetries, 30_000));
        try (var progress = ProgressBars.start("load postgres", shape.customers(), "customers",
            1)) {
          postgres.load(branches, customersPerBranch, OPENING_BALANCE, progress::stepTo);
        }
        ledgers.put("postgres", new Ledger());
      }

      for (SmallBankWorkload.Mix mix : chosenMixes) {
        List<Contender> contenders = new ArrayList<>();
        for (String target : targets) {
          contenders.add(switch (target) {
            case "postgres" -> {
              PostgresSmallBank bank = postgres;
              yield new Contender(mix.wireName() + "/" + target, shape, mix, seed,
                  settings.warmupRounds(),
                  new PostgresTarget(bank), ledgers.get("postgres"),
                  bank::serializationRetries, CpuMeter.postgres(postgresServer.dataDirectory(),
                      "PostgreSQL and its backends (the JDBC client is in this JVM)"));
            }
            case REST_AGAINST_POSTGRES -> {
              RestSmallBank bank = rest;
              yield new Contender(mix.wireName() + "/" + target, shape, mix, seed,
                  settings.warmupRounds(),
                  bank.view(TransactionRequest.Mode.PLANNED), ledgers.get("troupe rest"),
                  bank::lockConflictRetries, bank.cpu());
            }
            default -> {
              String policy = target.substring(0, target.indexOf('-'));
              TransactionRequest.Mode mode = target.endsWith("planned")
                  ? TransactionRequest.Mode.PLANNED : TransactionRequest.Mode.DYNAMIC;
              TroupeSmallBank engine = engines.get(policy);
              yield new Contender(mix.wireName() + "/" + target, shape, mix, seed,
                  settings.warmupRounds(),
                  engine.view(mode), ledgers.get("troupe " + policy),
                  () -> engine.troupe().transactionMetrics().lockConflictRetries(),
                  CpuMeter.thisJvm("this JVM: the embedded engine and the client"));
            }
          });
        }
        Map<String, AlternatingComparison.Outcome> outcomes = AlternatingComparison.run(
            "smallbank " + mix.wireName(), settings, new ArrayList<>(contenders), report);
        Map<String, Side> completed = new LinkedHashMap<>();
        for (Contender contender : contenders) {
          AlternatingComparison.Outcome outcome = outcomes.get(contender.name());
          completed.put(contender.target(),
              new Side(contender.report(report, outcome), outcome));
        }
        ratios(report, mix, shape, completed);
        checkMoney(report, mix, shape, engines, postgres, rest, ledgers);
      }
    } finally {
      for (TroupeSmallBank engine : engines.values()) {
        engine.close();
      }
      if (postgres != null) {
        postgres.close();
      }
      if (rest != null) {
        rest.close();
      }
      if (postgresServer != null) {
        postgresServer.close();
      }
    }
    return report;
  }

  @Override
  void afterPrint(BenchReport report) {
    htmlReport.write(report, HtmlReport.Layout.SMALLBANK);
  }

  /** A contender's completed transactions per second and the rounds it came from. */
  private record Side(double completedPerSecond, AlternatingComparison.Outcome outcome) {
    /** The share of the median throughput that completed (the rest aborted). */
    double completedShare() {
      return completedPerSecond / outcome.medianThroughput();
    }
  }

  private static void ratios(BenchReport report, SmallBankWorkload.Mix mix,
      SmallBankWorkload.Shape shape, Map<String, Side> completed) {
    boolean atGoalSkew = Math.abs(shape.actorSkew() - GOAL_ACTOR_SKEW) < 1e-9;
    for (String mode : List.of("planned", "dynamic")) {
      ratio(report, mix.wireName() + ": keys / serial, " + mode, completed.get("keys-" + mode),
          completed.get("serial-" + mode), atGoalSkew ? KEYS_OVER_SERIAL_GOAL : null);
    }
    // Troupe's default scheduling (auto is planned) with key-level admission: a contender fixed
    // in advance, not the best of four noisy medians picked after the run. Embedded, then over
    // REST (the path an application takes, issue 20).
    ratio(report, mix.wireName() + ": troupe embedded (" + TROUPE_AGAINST_POSTGRES
        + ") / postgres", completed.get(TROUPE_AGAINST_POSTGRES), completed.get("postgres"),
        TROUPE_OVER_POSTGRES_GOAL);
    ratio(report, mix.wireName() + ": troupe over REST (" + REST_AGAINST_POSTGRES
        + ") / postgres", completed.get(REST_AGAINST_POSTGRES), completed.get("postgres"),
        TROUPE_OVER_POSTGRES_GOAL);
  }

  /**
   * The ratio of two sides' completed rates, with the spread of the rounds' throughput ratios
   * scaled by the sides' completed shares; nothing when either side did not run.
   */
  private static void ratio(BenchReport report, String name, Side numerator, Side denominator,
      Goal goal) {
    if (numerator == null || denominator == null) {
      return;
    }
    Spread spread = Spread.ofRatios(numerator.outcome().throughputs(),
        denominator.outcome().throughputs())
        .scaled(numerator.completedShare() / denominator.completedShare());
    report.ratio(name, numerator.completedPerSecond(), denominator.completedPerSecond(), goal,
        spread);
  }

  private static void checkMoney(BenchReport report, SmallBankWorkload.Mix mix,
      SmallBankWorkload.Shape shape, Map<String, TroupeSmallBank> engines,
      PostgresSmallBank postgres, RestSmallBank rest, Map<String, Ledger> ledgers) {
    long opened = shape.customers() * 2 * OPENING_BALANCE;
    Map<String, Long> totals = new LinkedHashMap<>();
    engines.forEach((policy, engine) -> totals.put("troupe " + policy, engine.totalMoney(shape)));
    if (rest != null) {
      totals.put("troupe rest", rest.totalMoney(shape));
    }
    if (postgres != null) {
      totals.put("postgres", postgres.totalMoney());
    }
    totals.forEach((system, total) -> {
      Ledger ledger = ledgers.get(system);
      long highest = opened + ledger.netChange.sum();
      long lowest = highest - ledger.checks.sum();
      // Named without a slash: a system, not a workload's target, so charts leave it out.
      report.result(system.replace(' ', '-'), "money_total_after_" + mix.wireName(), total);
      if (total < lowest || total > highest) {
        report.failure(system + " after " + mix.wireName() + ": the accounts hold " + total
            + ", but the committed transactions allow only " + lowest + " to " + highest);
      }
    });
  }

  /** Money a system's committed transactions added or took, for the conservation check. */
  private static final class Ledger {
    /** Deposits and savings changes, minus check amounts. */
    final LongAdder netChange = new LongAdder();
    /** Committed checks: each may have cost 1 more (an overdraft penalty). */
    final LongAdder checks = new LongAdder();

    void committed(SmallBankWorkload.Transaction transaction) {
      switch (transaction) {
        case SmallBankWorkload.DepositChecking deposit -> netChange.add(deposit.amount());
        case SmallBankWorkload.TransactSavings savings -> netChange.add(savings.amount());
        case SmallBankWorkload.WriteCheck check -> {
          netChange.add(-check.amount());
          checks.increment();
        }
        case SmallBankWorkload.Balance ignored -> {}
        case SmallBankWorkload.Amalgamate ignored -> {}
        case SmallBankWorkload.SendPayment ignored -> {}
        case SmallBankWorkload.MultiTransfer ignored -> {}
      }
    }
  }

  /** PostgreSQL through {@link PostgresSmallBank}; retries exhausted count as aborted. */
  private record PostgresTarget(PostgresSmallBank bank) implements SmallBankTarget {
    @Override
    public Outcome execute(SmallBankWorkload.Transaction transaction) {
      try {
        PostgresSmallBank.Outcome outcome = switch (transaction) {
          case SmallBankWorkload.Balance balance -> {
            bank.balance(customer(balance.customer()));
            yield PostgresSmallBank.Outcome.COMMITTED;
          }
          case SmallBankWorkload.DepositChecking deposit ->
              bank.depositChecking(customer(deposit.customer()), deposit.amount());
          case SmallBankWorkload.TransactSavings savings ->
              bank.transactSavings(customer(savings.customer()), savings.amount());
          case SmallBankWorkload.Amalgamate amalgamate ->
              bank.amalgamate(customer(amalgamate.from()), customer(amalgamate.to()));
          case SmallBankWorkload.WriteCheck check -> {
            bank.writeCheck(customer(check.customer()), check.amount());
            yield PostgresSmallBank.Outcome.COMMITTED;
          }
          case SmallBankWorkload.SendPayment payment -> bank.sendPayment(
              customer(payment.from()), customer(payment.to()), payment.amount());
          case SmallBankWorkload.MultiTransfer transfer -> bank.multiTransfer(
              transfer.sources().stream().map(PostgresTarget::customer).toList(),
              transfer.destinations().stream().map(PostgresTarget::customer).toList(),
              transfer.amount());
        };
        return outcome == PostgresSmallBank.Outcome.COMMITTED
            ? Outcome.COMMITTED : Outcome.REJECTED;
      } catch (PostgresSmallBank.RetriesExhaustedException e) {
        return Outcome.ABORTED;
      }
    }

    private static PostgresSmallBank.Customer customer(SmallBankWorkload.Customer customer) {
      return new PostgresSmallBank.Customer(customer.branch(), customer.index());
    }
  }

  /**
   * One contender on one mix: its target, the clients' seeded transaction generators, and what its
   * transactions came to.
   */
  private static final class Contender implements AlternatingComparison.Contender {
    private final String name;
    private final SmallBankWorkload.Shape shape;
    private final SmallBankWorkload.Mix mix;
    private final long seed;
    private final SmallBankTarget target;
    private final Ledger ledger;
    private final java.util.function.LongSupplier conflictRetries;
    private final CpuMeter cpu;
    /** Rounds that only warm up: their conflict retries are not counted. */
    private final int warmupRounds;
    private final LongAdder measuredConflictRetries = new LongAdder();
    private final TransactionTally tally = new TransactionTally();
    private int rounds;

    Contender(String name, SmallBankWorkload.Shape shape, SmallBankWorkload.Mix mix, long seed,
        int warmupRounds, SmallBankTarget target, Ledger ledger,
        java.util.function.LongSupplier conflictRetries, CpuMeter cpu) {
      this.conflictRetries = conflictRetries;
      this.cpu = cpu;
      this.warmupRounds = warmupRounds;
      this.name = name;
      this.shape = shape;
      this.mix = mix;
      this.seed = seed;
      this.target = target;
      this.ledger = ledger;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public CpuMeter cpu() {
      return cpu;
    }

    String target() {
      return name.substring(name.indexOf('/') + 1);
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      int round = rounds++;
      SmallBankWorkload[] generators = new SmallBankWorkload[workers];
      for (int worker = 0; worker < workers; worker++) {
        // The same sequence per client and round for every contender.
        generators[worker] = new SmallBankWorkload(shape, mix,
            seed(seed, round, worker));
      }
      // Each worker's last transaction, counted if the harness says it was measured.
      SmallBankWorkload.Transaction[] lastTransaction = new SmallBankWorkload.Transaction[workers];
      SmallBankTarget.Outcome[] lastOutcome = new SmallBankTarget.Outcome[workers];
      long[] lastLatencyNanos = new long[workers];
      // One contender runs at a time, so its engine's retries during its session are its own.
      long retriesBefore = conflictRetries.getAsLong();
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) throws Exception {
          SmallBankWorkload.Transaction transaction = generators[worker].next();
          long start = System.nanoTime();
          SmallBankTarget.Outcome outcome = target.execute(transaction);
          lastLatencyNanos[worker] = System.nanoTime() - start;
          lastTransaction[worker] = transaction;
          lastOutcome[worker] = outcome;
          switch (outcome) {
            case COMMITTED -> ledger.committed(transaction);
            case REJECTED, ABORTED -> {}
          }
        }

        @Override
        public void counted(int worker) {
          tally.record(TransactionTally.Result.of(lastOutcome[worker]),
              lastTransaction[worker].name(), lastLatencyNanos[worker]);
        }

        @Override
        public void close() {
          if (round >= warmupRounds) { // the first rounds only warm up
            measuredConflictRetries.add(conflictRetries.getAsLong() - retriesBefore);
          }
        }
      };
    }

    /** The same for every contender in a round, different for every client, round and seed. */
    private static long seed(long seed, int round, int worker) {
      return (seed * 1_000_003L + round) * 1_000_003L + worker;
    }

    /** Adds this contender's figures; returns its completed transactions per second. */
    double report(BenchReport report, AlternatingComparison.Outcome outcome) {
      return tally.report(report, name, outcome,
          Map.of("conflict_retries", (double) measuredConflictRetries.sum()));
    }
  }
}
