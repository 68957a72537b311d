package dev.troupe.txn.check;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The transactions a test observed, in the order they were recorded. The checkers read it; the
 * order carries no meaning for them (serializability is decided from versions, not from recording
 * order) but keeps their answers deterministic for a given history.
 *
 * @param transactions the recorded transactions (copied; no nulls)
 */
public record History(List<RecordedTransaction> transactions) {

  /**
   * Copies the list.
   *
   * @throws NullPointerException if the list or any element is null
   */
  public History {
    transactions = List.copyOf(transactions);
  }

  /** A history of the given transactions, in this order. */
  public static History of(RecordedTransaction... transactions) {
    return new History(List.of(transactions));
  }

  /** The history with no transactions. */
  public static History empty() {
    return new History(List.of());
  }

  /** Number of recorded transactions, whatever their outcome. */
  public int size() {
    return transactions.size();
  }

  /**
   * Collects the transactions of concurrent test clients. Safe to use from any number of threads;
   * {@link #snapshot()} sees every {@link #record} that completed before it began.
   */
  public static final class Recorder {
    private final Object lock = new Object();
    private final List<RecordedTransaction> recorded = new ArrayList<>();

    /**
     * Appends one transaction.
     *
     * @throws NullPointerException if the transaction is null
     */
    public void record(RecordedTransaction transaction) {
      Objects.requireNonNull(transaction, "transaction");
      synchronized (lock) {
        recorded.add(transaction);
      }
    }

    /** The transactions recorded so far, as an immutable history later records do not change. */
    public History snapshot() {
      synchronized (lock) {
        return new History(recorded);
      }
    }
  }
}
