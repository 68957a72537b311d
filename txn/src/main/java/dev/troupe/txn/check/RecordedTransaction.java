package dev.troupe.txn.check;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One transaction as a test client saw it: what it read, what it wrote, and how it ended. This is
 * the unit the history checkers reason about, so it is validated on construction: a checker must
 * never have to guess what a malformed record meant.
 *
 * <p>Versions are longs, unique per object and totally ordered per object by their numeric value
 * (a greater version is a later write of that object). Version {@code 0} is the initial,
 * never-written state of every object; no write produces it.
 *
 * @param id the transaction's identifier, unique within a history (non-blank)
 * @param outcome how the transaction ended, as far as the client knows
 * @param reads object id to the version the transaction observed ({@code >= 0}); iterated in object
 *     id order
 * @param writes object id to the version the transaction's write produced ({@code > 0}); iterated
 *     in object id order. An object may appear in both maps (a read-modify-write).
 */
public record RecordedTransaction(
    String id, Outcome outcome, Map<String, Long> reads, Map<String, Long> writes) {

  /** How a transaction ended, as far as the client that ran it knows. */
  public enum Outcome {
    /** The client was told the transaction committed. */
    COMMITTED,
    /** The client was told the transaction aborted: none of its writes may ever be observed. */
    ABORTED,
    /**
     * The client never learnt the outcome (a timeout, a lost connection): the transaction may or
     * may not have committed.
     */
    UNKNOWN
  }

  /**
   * Validates and copies.
   *
   * @throws NullPointerException if any argument, object id or version is null
   * @throws IllegalArgumentException if the id is blank, a read version is negative or a write
   *     version is not positive
   */
  public RecordedTransaction {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(outcome, "outcome");
    if (id.isBlank()) {
      throw new IllegalArgumentException("transaction id must not be blank");
    }
    reads = copyVersions(id, "read", reads, 0);
    writes = copyVersions(id, "write", writes, 1);
  }

  /** A transaction the client was told committed. */
  public static RecordedTransaction committed(
      String id, Map<String, Long> reads, Map<String, Long> writes) {
    return new RecordedTransaction(id, Outcome.COMMITTED, reads, writes);
  }

  /** A transaction the client was told aborted. */
  public static RecordedTransaction aborted(
      String id, Map<String, Long> reads, Map<String, Long> writes) {
    return new RecordedTransaction(id, Outcome.ABORTED, reads, writes);
  }

  /** A transaction whose outcome the client never learnt. */
  public static RecordedTransaction unknown(
      String id, Map<String, Long> reads, Map<String, Long> writes) {
    return new RecordedTransaction(id, Outcome.UNKNOWN, reads, writes);
  }

  private static SortedMap<String, Long> copyVersions(
      String transactionId, String what, Map<String, Long> versions, long smallestAllowed) {
    Objects.requireNonNull(versions, what + "s of " + transactionId);
    TreeMap<String, Long> copy = new TreeMap<>();
    for (Map.Entry<String, Long> entry : versions.entrySet()) {
      String objectId = Objects.requireNonNull(
          entry.getKey(), () -> "object id in " + what + "s of " + transactionId);
      Long version = Objects.requireNonNull(
          entry.getValue(), () -> what + " version of " + objectId + " in " + transactionId);
      if (version < smallestAllowed) {
        throw new IllegalArgumentException(what + " version of " + objectId + " in " + transactionId
            + " must be >= " + smallestAllowed + ", was " + version);
      }
      copy.put(objectId, version);
    }
    return Collections.unmodifiableSortedMap(copy);
  }
}
