package dev.troupe.bench;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The SmallBank workload (smsa.txt §4.2.2, after Alomari et al.): customers with a checking and a
 * savings account, held by branch entities ("account actors": each branch holds many customers,
 * one key per account), and the transactions that move money between them.
 *
 * <p><b>Skew</b>, as in SmSa: {@code actorSkew} is the share of branches that are hot and {@code
 * keySkew} the share of a branch's customers that are hot; a pick falls on the hot set with
 * probability 3/4 and on the rest otherwise, and a share of 1 makes every pick uniform. The
 * smaller the share, the higher the contention on entities (actor skew) or on keys (key skew).
 *
 * <p><b>Mixes</b>: {@link Mix#SMALLBANK} is the benchmark's classic mix of its six transactions
 * (Amalgamate 15%, Balance 15%, DepositChecking 15%, SendPayment 25%, TransactSavings 15%,
 * WriteCheck 15%); {@link Mix#MULTITRANSFER} is Snapper's MultiTransfer alone, as in SmSa's
 * experiments: money from {@code transactionSize} customers of one branch to {@code
 * transactionSize} customers of each of three other branches.
 *
 * <p>Pure: a generator is a function of its seed; not thread-safe (one per worker).
 */
public final class SmallBankWorkload {
  /** Branches a MultiTransfer touches, as in SmSa (one source, three destinations). */
  public static final int MULTITRANSFER_BRANCHES = 4;
  /** Largest amount a transaction moves (amounts are uniform in 1..this). */
  static final int MAX_AMOUNT = 100;

  /** Which transactions a run issues. */
  public enum Mix {
    SMALLBANK,
    MULTITRANSFER;

    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * The shape of the data and the load.
   *
   * @param branches branch entities
   * @param customersPerBranch customers per branch (two keys each)
   * @param actorSkew share of hot branches, in (0, 1]
   * @param keySkew share of hot customers per branch, in (0, 1]
   * @param transactionSize customers a MultiTransfer touches per branch
   */
  public record Shape(int branches, int customersPerBranch, double actorSkew, double keySkew,
      int transactionSize) {
    public Shape {
      if (branches < MULTITRANSFER_BRANCHES) {
        throw new IllegalArgumentException(
            "SmallBank needs at least " + MULTITRANSFER_BRANCHES + " branches");
      }
      if (customersPerBranch < 2) {
        throw new IllegalArgumentException("SmallBank needs at least 2 customers per branch");
      }
      if (!(actorSkew > 0 && actorSkew <= 1) || !(keySkew > 0 && keySkew <= 1)) {
        throw new IllegalArgumentException("skews are shares in (0, 1], e.g. 0.01 for 1%");
      }
      if (transactionSize < 1 || transactionSize > customersPerBranch) {
        throw new IllegalArgumentException(
            "the transaction size is 1 to the customers per branch");
      }
    }

    public long customers() {
      return (long) branches * customersPerBranch;
    }
  }

  /** One customer: a branch and the customer's index in it. */
  public record Customer(int branch, int index) {}

  /** One SmallBank transaction with its arguments. */
  public sealed interface Transaction {
    /** Its name in reports. */
    default String name() {
      return getClass().getSimpleName();
    }
  }

  /** Reads a customer's checking plus savings. */
  public record Balance(Customer customer) implements Transaction {}

  /** Adds to a customer's checking. */
  public record DepositChecking(Customer customer, long amount) implements Transaction {}

  /** Adds to (or, negative, takes from) savings; refused if savings would go below zero. */
  public record TransactSavings(Customer customer, long amount) implements Transaction {}

  /** Moves all of one customer's money into another's checking. */
  public record Amalgamate(Customer from, Customer to) implements Transaction {}

  /** Cashes a check against checking; overdrawing (checking + savings short) costs 1 more. */
  public record WriteCheck(Customer customer, long amount) implements Transaction {}

  /** Moves money between checkings; refused if the payer's checking is short. */
  public record SendPayment(Customer from, Customer to, long amount) implements Transaction {}

  /**
   * Each source's checking gives {@code amount × destinations}, each destination's checking gets
   * {@code amount × sources}; refused if any source is short.
   */
  public record MultiTransfer(List<Customer> sources, List<Customer> destinations, long amount)
      implements Transaction {
    public MultiTransfer {
      sources = List.copyOf(sources);
      destinations = List.copyOf(destinations);
    }

    public long debitPerSource() {
      return amount * destinations.size();
    }

    public long creditPerDestination() {
      return amount * sources.size();
    }
  }

  private final Shape shape;
  private final Mix mix;
  private final SplittableRandom random;

  public SmallBankWorkload(Shape shape, Mix mix, long seed) {
    this.shape = shape;
    this.mix = mix;
    this.random = new SplittableRandom(seed);
  }

  /** The next transaction. */
  public Transaction next() {
    if (mix == Mix.MULTITRANSFER) {
      return multiTransfer();
    }
    int dice = random.nextInt(100);
    if (dice < 15) {
      Customer from = customer();
      return new Amalgamate(from, otherCustomerThan(from));
    }
    if (dice < 30) {
      return new Balance(customer());
    }
    if (dice < 45) {
      return new DepositChecking(customer(), amount());
    }
    if (dice < 70) {
      Customer from = customer();
      return new SendPayment(from, otherCustomerThan(from), amount());
    }
    if (dice < 85) {
      // Half deposits, half withdrawals, so savings neither drain nor grow without bound.
      return new TransactSavings(customer(), random.nextBoolean() ? amount() : -amount());
    }
    return new WriteCheck(customer(), amount());
  }

  private MultiTransfer multiTransfer() {
    Set<Integer> branches = new HashSet<>();
    List<Integer> chosen = new ArrayList<>();
    while (chosen.size() < MULTITRANSFER_BRANCHES) {
      int branch = pick(shape.branches(), shape.actorSkew());
      if (branches.add(branch)) {
        chosen.add(branch);
      }
    }
    List<Customer> sources = customersOf(chosen.getFirst());
    List<Customer> destinations = new ArrayList<>();
    for (int branch : chosen.subList(1, chosen.size())) {
      destinations.addAll(customersOf(branch));
    }
    return new MultiTransfer(sources, destinations, amount());
  }

  private List<Customer> customersOf(int branch) {
    Set<Integer> indexes = new HashSet<>();
    List<Customer> customers = new ArrayList<>();
    while (customers.size() < shape.transactionSize()) {
      int index = pick(shape.customersPerBranch(), shape.keySkew());
      if (indexes.add(index)) {
        customers.add(new Customer(branch, index));
      }
    }
    return customers;
  }

  private Customer customer() {
    return new Customer(pick(shape.branches(), shape.actorSkew()),
        pick(shape.customersPerBranch(), shape.keySkew()));
  }

  private Customer otherCustomerThan(Customer excluded) {
    while (true) {
      Customer candidate = customer();
      if (!candidate.equals(excluded)) {
        return candidate;
      }
    }
  }

  private long amount() {
    return 1 + random.nextInt(MAX_AMOUNT);
  }

  /** An index in [0, size), skewed as SmSa picks ({@link HotSetPick}). */
  int pick(int size, double skew) {
    return HotSetPick.pick(random, size, skew);
  }
}
