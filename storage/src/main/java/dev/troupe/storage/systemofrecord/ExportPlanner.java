package dev.troupe.storage.systemofrecord;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The system-of-record exporter's decision of what to apply next (docs/ARCHITECTURE.md, "System of
 * record"): a pure function of the watermark, the safe timestamp and the journal records read
 * ahead per partition. No I/O, no clock.
 *
 * <p><b>Invariants.</b> A batch holds whole journal records only, every record with a commit
 * timestamp in {@code (watermark, upTo]} and no other, so applying batches one after another
 * applies the journal in commit order with no record skipped or cut: (1) {@code upTo} is at most
 * the safe timestamp, below which every record is durable and known (no record at or below it can
 * still be written); (2) {@code upTo} is at most the last timestamp read of any partition whose
 * read-ahead was cut by its limit, since that partition may hold unread records just above it;
 * (3) when {@code maxRecords} cuts the merge, {@code upTo} is the last record taken (timestamps
 * are unique node-wide: one clock ticks them all); (4) it ends before the first record of a
 * transaction not known whole (a part of it may still be committing, with a later timestamp).
 * Replaying a batch is harmless: its rows carry
 * their versions and the shell's writes are guarded by them.
 *
 * <p><b>Concurrency.</b> Immutable inputs and outputs; call from any thread.
 */
public final class ExportPlanner {
  private ExportPlanner() {}

  /**
   * One journal record as the planner needs it: where it is, its transaction (the parts of a
   * multi-entity transaction are records of one transaction id, one per participant, each with a
   * commit timestamp of its own), its commit timestamp, the data centre it committed in, and the
   * entities it wrote.
   */
  public record PendingRecord(int partition, long sequence, long transactionId,
      long commitTimestamp, int originDc, List<EntityId> entities) {
    public PendingRecord {
      entities = List.copyOf(entities);
    }
  }

  /**
   * What was read ahead of one partition: its records from its cursor on, in sequence order, and
   * whether the read was cut by its limit (more records may follow the last one).
   */
  public record PartitionAhead(List<PendingRecord> records, boolean cut) {
    public PartitionAhead {
      records = List.copyOf(records);
    }
  }

  /**
   * A batch to apply in one PostgreSQL transaction.
   *
   * @param upTo the watermark once it is applied: every record at or below it is in the batch or
   *     an earlier one
   * @param entities every entity written by the batch's records, in last-written order, with the
   *     origin DC of its last record in the batch
   * @param records how many journal records it covers
   * @param firstCommitTimestamp the commit timestamp of its first (oldest) record
   * @param nextSequences per partition, the sequence after the last record taken (absent: none
   *     taken)
   */
  public record Batch(long upTo, Map<EntityId, Integer> entities, int records,
      long firstCommitTimestamp, Map<Integer, Long> nextSequences) {}

  /**
   * The next batch, or null when no record is at or below the bound (nothing to apply yet).
   *
   * @param watermark every record at or below it was applied; records at or below it in {@code
   *     ahead} are skipped (a replay after a restart reads from the sequence after it)
   * @param safeTimestamp every record at or below it is durable and read-ahead-able
   * @param ahead per partition (index = partition), its records from its cursor on
   * @param maxRecords the most records one batch covers ({@code
   *     troupe.system-of-record.batch-max-records})
   * @param whole whether every part of a transaction is known to be durable at or below the safe
   *     timestamp (the shell saw its commit decision forgotten, or none, before it took the safe
   *     timestamp): the batch ends before the first record of a transaction not known whole, so
   *     that a multi-entity transaction is never cut by the watermark while a part is still
   *     being committed
   */
  public static Batch next(long watermark, long safeTimestamp, List<PartitionAhead> ahead,
      int maxRecords, java.util.function.LongPredicate whole) {
    Invariants.check(maxRecords >= 1, "a batch covers at least one record, not %d", maxRecords);
    long bound = safeTimestamp;
    for (PartitionAhead partition : ahead) {
      if (partition.cut() && !partition.records().isEmpty()) {
        bound = Math.min(bound, partition.records().getLast().commitTimestamp());
      }
    }
    int[] positions = new int[ahead.size()];
    Map<EntityId, Integer> entities = new LinkedHashMap<>();
    Map<Integer, Long> nextSequences = new LinkedHashMap<>();
    long upTo = bound;
    int taken = 0;
    long previous = watermark;
    long first = 0;
    while (true) {
      // The k-way merge: the partition whose next record has the lowest commit timestamp.
      int best = -1;
      long bestTimestamp = Long.MAX_VALUE;
      for (int p = 0; p < ahead.size(); p++) {
        List<PendingRecord> records = ahead.get(p).records();
        while (positions[p] < records.size()
            && records.get(positions[p]).commitTimestamp() <= watermark) {
          positions[p]++; // applied already (a replay's read-ahead)
        }
        if (positions[p] < records.size()
            && records.get(positions[p]).commitTimestamp() < bestTimestamp) {
          best = p;
          bestTimestamp = records.get(positions[p]).commitTimestamp();
        }
      }
      if (best < 0 || bestTimestamp > bound) {
        break;
      }
      PendingRecord next = ahead.get(best).records().get(positions[best]);
      if (taken == maxRecords || !whole.test(next.transactionId())) {
        upTo = previous;
        break;
      }
      PendingRecord record = ahead.get(best).records().get(positions[best]++);
      Invariants.check(record.commitTimestamp() > previous,
          "journal records merge in commit order: %d after %d", record.commitTimestamp(), previous);
      previous = record.commitTimestamp();
      if (taken == 0) {
        first = previous;
      }
      for (EntityId entity : record.entities()) {
        entities.remove(entity); // re-inserted below: the map keeps the origin of the last write
        entities.put(entity, record.originDc());
      }
      nextSequences.put(record.partition(), record.sequence() + 1);
      taken++;
    }
    if (taken == 0) {
      return null;
    }
    return new Batch(upTo, entities, taken, first, nextSequences);
  }
}
