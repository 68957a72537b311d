package dev.troupe.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench marketplace}: the Online Marketplace (smsa.txt §4.6) on embedded Troupe
 * engines, its cross-entity consistency (cart prices replicating product prices, stock as a
 * foreign key of its product, seller dashboards as materialized views of orders) kept in two
 * ways over the same workload: {@code declared} as dependencies ({@link DeclaredMarketplace}) and
 * {@code hand-coded} in application transactions ({@link HandCodedMarketplace}).
 *
 * <p><b>Fair</b>: each contender has its own engine (same settings, fresh directory) and the same
 * data; every client gets the same seeded sequence of transactions per round on both; rounds
 * alternate ({@link AlternatingComparison}); durable commits on both.
 *
 * <p><b>Counted</b>: a transaction is <i>completed</i> when it committed or the application
 * refused it (out of stock, product gone, empty cart), and <i>aborted</i> when the engine gave up
 * on a conflict or the application's compare-and-set retries ran out. After the run, the four
 * checks of {@link MarketplaceChecks} run on each contender; any violation fails the run.
 */
@Command(
    name = "marketplace",
    mixinStandardHelpOptions = true,
    description = "Online Marketplace: consistency declared as dependencies vs hand-coded in"
        + " application transactions, on Troupe. Goals: declared / hand-coded >= 1.5; no"
        + " violation of any check.")
final class MarketplaceBenchmark extends Benchmark {
  static final Goal DECLARED_OVER_HAND_CODED_GOAL = Goal.atLeast(1.5);
  static final Goal NO_VIOLATIONS = Goal.atMost(0, "violations");
  static final String WORKLOAD = "marketplace";

  @Option(names = "--sellers", defaultValue = "10",
      description = "Sellers (default: ${DEFAULT-VALUE}).")
  int sellers;

  @Option(names = "--products-per-seller", defaultValue = "100",
      description = "Products each seller lists (default: ${DEFAULT-VALUE}).")
  int productsPerSeller;

  @Option(names = "--customers", defaultValue = "1000",
      description = "Customers, each with a cart (default: ${DEFAULT-VALUE}).")
  int customers;

  @Option(names = "--actor-skew", defaultValue = "100", paramLabel = "PERCENT",
      description = "Share of hot customers and of hot sellers in percent; 3/4 of picks fall on"
          + " them; 100 is uniform (default: ${DEFAULT-VALUE}).")
  double actorSkewPercent;

  @Option(names = "--key-skew", defaultValue = "100", paramLabel = "PERCENT",
      description = "Share of hot products of each seller in percent (default: ${DEFAULT-VALUE}).")
  double keySkewPercent;

  @Option(names = "--stock", defaultValue = "10000",
      description = "Units in stock of every product when listed (default: ${DEFAULT-VALUE}).")
  long stock;

  @Option(names = "--threads", defaultValue = "64",
      description = "Concurrent closed-loop clients (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--contenders", split = ",", defaultValue = "declared,hand-coded",
      description = "Contenders to run, comma-separated (declared, hand-coded); the ratio needs"
          + " both, one alone is for profiling its side (default: ${DEFAULT-VALUE}).")
  List<String> contenderNames;

  @Option(names = "--seed", defaultValue = "1",
      description = "Seed of the prices and the clients' transaction sequences"
          + " (default: ${DEFAULT-VALUE}).")
  long seed;

  @Mixin HtmlReportOption htmlReport;

  @Mixin AlternationOptions alternation;

  @Override
  BenchReport run() throws Exception {
    if (stock < 1) {
      throw new IllegalArgumentException("--stock must be at least 1");
    }
    for (String contender : contenderNames) {
      if (!TroupeMarketplace.CONTENDERS.contains(contender)) {
        throw new IllegalArgumentException("unknown contender '" + contender + "'; use "
            + String.join(", ", TroupeMarketplace.CONTENDERS));
      }
    }
    MarketplaceWorkload.Shape shape = new MarketplaceWorkload.Shape(sellers, productsPerSeller,
        customers, actorSkewPercent / 100, keySkewPercent / 100);
    AlternatingComparison.Settings settings = alternation.settings(threads);
    BenchReport report = new BenchReport(WORKLOAD, "Online Marketplace: consistency declared as"
        + " dependencies vs hand-coded in application transactions");
    settings.describe(report);
    report.parameter("sellers", sellers)
        .parameter("products_per_seller", productsPerSeller)
        .parameter("customers", customers)
        .parameter("actor_skew_percent", actorSkewPercent)
        .parameter("key_skew_percent", keySkewPercent)
        .parameter("stock_per_product", stock)
        .parameter("seed", seed)
        .parameter("contenders", String.join(",", contenderNames))
        .parameter("mix_per_mille", "AddItemToCart " + MarketplaceWorkload.ADD_ITEM
            + ", DeleteItemInCart " + MarketplaceWorkload.DELETE_ITEM
            + ", UpdatePrice " + MarketplaceWorkload.UPDATE_PRICE
            + ", Checkout " + MarketplaceWorkload.CHECKOUT
            + ", SellerDashboard " + MarketplaceWorkload.DASHBOARD
            + ", DeleteProduct " + MarketplaceWorkload.DELETE_PRODUCT)
        .parameter("max_application_attempts", TroupeMarketplace.MAX_ATTEMPTS)
        .parameter("max_conflict_retries",
            dev.troupe.runtime.RuntimeSettings.load().transactions().maxLockConflictRetries())
        .parameter("troupe_client", "embedded API");

    Map<String, TroupeMarketplace> markets = new LinkedHashMap<>();
    try {
      for (String contender : TroupeMarketplace.CONTENDERS) {
        if (!contenderNames.contains(contender)) {
          continue;
        }
        markets.put(contender, TroupeMarketplace.open(contender, shape, stock, seed, threads));
      }
      List<Contender> contenders = new ArrayList<>();
      markets.forEach((name, market) ->
          contenders.add(new Contender(WORKLOAD + "/" + name, market, shape, stock, seed,
              settings.warmupRounds())));
      Map<String, AlternatingComparison.Outcome> outcomes = AlternatingComparison.run(WORKLOAD,
          settings, new ArrayList<>(contenders), report);
      Map<String, Double> completed = new LinkedHashMap<>();
      Map<String, AlternatingComparison.Outcome> byMarket = new LinkedHashMap<>();
      for (Contender contender : contenders) {
        completed.put(contender.market.name,
            contender.report(report, outcomes.get(contender.name())));
        byMarket.put(contender.market.name, outcomes.get(contender.name()));
      }
      if (markets.size() == TroupeMarketplace.CONTENDERS.size()) {
        AlternatingComparison.Outcome declared = byMarket.get(TroupeMarketplace.DECLARED);
        AlternatingComparison.Outcome handCoded = byMarket.get(TroupeMarketplace.HAND_CODED);
        double declaredCompleted = completed.get(TroupeMarketplace.DECLARED);
        double handCodedCompleted = completed.get(TroupeMarketplace.HAND_CODED);
        // The rounds' own ratios, scaled by the sides' completed shares like the medians.
        Spread spread = Spread.ofRatios(declared.throughputs(), handCoded.throughputs())
            .scaled((declaredCompleted / declared.medianThroughput())
                / (handCodedCompleted / handCoded.medianThroughput()));
        report.ratio("declared / hand-coded, completed per second", declaredCompleted,
            handCodedCompleted, DECLARED_OVER_HAND_CODED_GOAL, spread);
      }
      for (Contender contender : contenders) {
        check(report, contender);
      }
    } finally {
      for (TroupeMarketplace market : markets.values()) {
        market.close();
      }
    }
    return report;
  }

  @Override
  void afterPrint(BenchReport report) {
    htmlReport.write(report, HtmlReport.Layout.MARKETPLACE);
  }

  /** Runs the checks on one contender's engine and reports every check against zero. */
  private static void check(BenchReport report, Contender contender)
      throws InterruptedException {
    MarketplaceChecks.Violations violations = MarketplaceChecks.check(contender.market);
    long[] counts = {violations.prices(), violations.stock(), violations.foreignKeys(),
        violations.dashboards()};
    for (int check = 0; check < counts.length; check++) {
      String figure = MarketplaceChecks.NAMES.get(check);
      report.result(contender.name(), "violations_" + figure, counts[check]);
      report.goal(contender.market.name + ": " + figure + " violations", counts[check],
          NO_VIOLATIONS);
    }
    report.result(contender.name(), "orders_checked", contender.market.orders.size());
    // Not a violation (see MarketplaceChecks.Violations): how often the order's own commit
    // timestamp is not a consistent cut of its checkout.
    report.result(contender.name(), "order_version_mismatches",
        violations.orderVersionMismatches());
    for (String example : violations.mismatchExamples()) {
      System.err.println("note: " + example);
    }
    if (violations.total() > 0) {
      report.failure(contender.market.name + ": " + violations.total() + " consistency"
          + " violations (prices " + violations.prices() + ", stock " + violations.stock()
          + ", foreign keys " + violations.foreignKeys() + ", dashboards "
          + violations.dashboards() + "), e.g. " + String.join("; ", violations.examples()));
    }
  }

  /** One contender: its engine, the clients' seeded generators, and what its transactions did. */
  private static final class Contender implements AlternatingComparison.Contender {
    private final String name;
    private final TroupeMarketplace market;
    private final MarketplaceWorkload.Shape shape;
    private final long stock;
    private final long seed;
    private final TransactionTally tally = new TransactionTally();
    private final LongAdder measuredConflictRetries = new LongAdder();
    private final LongAdder measuredApplicationRetries = new LongAdder();
    private int rounds;
    /** Rounds that only warm up: nothing of theirs is counted. */
    private final int warmupRounds;

    Contender(String name, TroupeMarketplace market, MarketplaceWorkload.Shape shape, long stock,
        long seed, int warmupRounds) {
      this.warmupRounds = warmupRounds;
      this.name = name;
      this.market = market;
      this.shape = shape;
      this.stock = stock;
      this.seed = seed;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      int round = rounds++;
      MarketplaceWorkload[] generators = new MarketplaceWorkload[workers];
      for (int worker = 0; worker < workers; worker++) {
        // The same sequence per client and round for every contender.
        generators[worker] = new MarketplaceWorkload(shape, stock,
            (seed * 1_000_003L + round) * 1_000_003L + worker);
      }
      MarketplaceWorkload.Transaction[] lastTransaction =
          new MarketplaceWorkload.Transaction[workers];
      TroupeMarketplace.Outcome[] lastOutcome = new TroupeMarketplace.Outcome[workers];
      long[] lastLatencyNanos = new long[workers];
      // One contender runs at a time, so its engine's retries during its session are its own.
      long conflictRetriesBefore = market.conflictRetries();
      long applicationRetriesBefore = market.applicationRetries.sum();
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) {
          MarketplaceWorkload.Transaction transaction = generators[worker].next();
          long start = System.nanoTime();
          TroupeMarketplace.Outcome outcome = market.execute(transaction);
          lastLatencyNanos[worker] = System.nanoTime() - start;
          lastTransaction[worker] = transaction;
          lastOutcome[worker] = outcome;
        }

        @Override
        public void counted(int worker) {
          tally.record(TransactionTally.Result.of(lastOutcome[worker]),
              lastTransaction[worker].name(), lastLatencyNanos[worker]);
        }

        @Override
        public void close() {
          if (round >= warmupRounds) { // the first rounds only warm up
            measuredConflictRetries.add(market.conflictRetries() - conflictRetriesBefore);
            measuredApplicationRetries.add(
                market.applicationRetries.sum() - applicationRetriesBefore);
          }
        }
      };
    }

    /** Adds this contender's figures; returns its completed transactions per second. */
    double report(BenchReport report, AlternatingComparison.Outcome outcome) {
      Map<String, Double> extra = new LinkedHashMap<>();
      extra.put("conflict_retries", (double) measuredConflictRetries.sum());
      // Whole run, warm-up included: how planning with dependencies went.
      extra.put("replanned", (double) market.replanned());
      extra.put("planned_ran_dynamic", (double) market.plannedRanDynamic());
      extra.put("application_retries", (double) measuredApplicationRetries.sum());
      return tally.report(report, name, outcome, extra);
    }
  }
}
