package dev.troupe.txn.check;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Checks the bank invariants of a transfer workload: transfers move money between accounts, so
 * the total of the final balances must equal the total the test started with, and no account may
 * be overdrawn. A lost or duplicated transfer, or one applied on one side only, breaks the first;
 * a non-serializable pair of withdrawals typically breaks the second.
 */
public final class ConservationChecker {

  /** The final balances do not add up to the expected total. */
  public static final String TOTAL_NOT_CONSERVED = "total_not_conserved";

  /** At least one account ended with a negative balance. */
  public static final String NEGATIVE_BALANCE = "negative_balance";

  private ConservationChecker() {}

  /** The checker's verdict on one set of final balances. */
  public sealed interface Result permits Conserved, Violation {}

  /**
   * Both invariants hold.
   *
   * @param total the sum of the final balances (equal to the expected total)
   * @param accounts the number of accounts checked
   */
  public record Conserved(long total, int accounts) implements Result {}

  /**
   * At least one invariant is broken.
   *
   * @param kinds the broken invariants, {@link #TOTAL_NOT_CONSERVED} before {@link
   *     #NEGATIVE_BALANCE}, each at most once
   * @param total the sum of the final balances
   * @param expectedTotal the total the balances should add up to
   * @param negativeBalances the accounts with a negative balance, by account id (empty if none)
   */
  public record Violation(
      List<String> kinds, long total, long expectedTotal, SortedMap<String, Long> negativeBalances)
      implements Result {
    /** Copies. */
    public Violation {
      kinds = List.copyOf(kinds);
      negativeBalances = Collections.unmodifiableSortedMap(new TreeMap<>(negativeBalances));
    }

    /** A one-line account of what is broken. */
    public String explanation() {
      return "total " + total + " (expected " + expectedTotal + ")"
          + (negativeBalances.isEmpty() ? "" : ", negative balances " + negativeBalances);
    }
  }

  /**
   * Checks the final balances against the expected total.
   *
   * @param finalBalances account id to final balance (no null keys or values)
   * @param expectedTotal the sum of the initial balances
   * @throws NullPointerException if the map, an account id or a balance is null
   * @throws ArithmeticException if the balances' sum overflows a long
   */
  public static Result check(Map<String, Long> finalBalances, long expectedTotal) {
    Objects.requireNonNull(finalBalances, "finalBalances");
    long total = 0;
    SortedMap<String, Long> negativeBalances = new TreeMap<>();
    for (Map.Entry<String, Long> account : finalBalances.entrySet()) {
      String accountId = Objects.requireNonNull(account.getKey(), "account id");
      long balance = Objects.requireNonNull(account.getValue(), () -> "balance of " + accountId);
      total = Math.addExact(total, balance);
      if (balance < 0) {
        negativeBalances.put(accountId, balance);
      }
    }
    List<String> kinds = new ArrayList<>(2);
    if (total != expectedTotal) {
      kinds.add(TOTAL_NOT_CONSERVED);
    }
    if (!negativeBalances.isEmpty()) {
      kinds.add(NEGATIVE_BALANCE);
    }
    return kinds.isEmpty()
        ? new Conserved(total, finalBalances.size())
        : new Violation(kinds, total, expectedTotal, negativeBalances);
  }
}
