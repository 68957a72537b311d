package dev.troupe.txn.check;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Checks that every committed transaction saw every other committed transaction entirely or not at
 * all (no fractured read): for a reader R and a writer W that wrote two objects R read, R observed
 * W's write of one ({@code readVersion >= writtenVersion}, versions being ordered per object) exactly
 * when it observed W's write of the other.
 *
 * <p>Weaker than {@link SerializabilityChecker}, and meant for admission policies that reorder
 * commuting actions (PSAC): two entities may apply two commuting transfers in opposite orders,
 * which a version-based dependency graph reports as a write cycle although no client can tell, but
 * no transaction may ever see half of another. Pure; linear in readers times writers.
 */
public final class AtomicVisibilityChecker {
  private AtomicVisibilityChecker() {}

  /** The verdict. */
  public sealed interface Result {}

  /** No fractured read; {@code pairsChecked} reader-writer pairs sharing two or more objects. */
  public record Atomic(long pairsChecked) implements Result {}

  /** A reader saw part of a writer. */
  public record Fractured(String reader, String writer, String explanation) implements Result {}

  public static Result check(History history) {
    List<RecordedTransaction> committed = new ArrayList<>();
    for (RecordedTransaction transaction : history.transactions()) {
      if (transaction.outcome() == RecordedTransaction.Outcome.COMMITTED) {
        committed.add(transaction);
      }
    }
    long pairs = 0;
    for (RecordedTransaction reader : committed) {
      if (reader.reads().size() < 2) {
        continue;
      }
      for (RecordedTransaction writer : committed) {
        if (writer == reader || writer.writes().size() < 2) {
          continue;
        }
        String seenObject = null;
        String unseenObject = null;
        int shared = 0;
        for (Map.Entry<String, Long> write : writer.writes().entrySet()) {
          Long read = reader.reads().get(write.getKey());
          if (read == null || reader.writes().containsKey(write.getKey())) {
            continue; // not read, or read-modify-written by the reader itself
          }
          shared++;
          if (read >= write.getValue()) {
            seenObject = write.getKey();
          } else {
            unseenObject = write.getKey();
          }
        }
        if (shared >= 2) {
          pairs++;
        }
        if (seenObject != null && unseenObject != null) {
          return new Fractured(reader.id(), writer.id(), "%s saw %s's write of %s but not of %s"
              .formatted(reader.id(), writer.id(), seenObject, unseenObject));
        }
      }
    }
    return new Atomic(pairs);
  }
}
