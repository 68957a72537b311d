package dev.troupe.storage.systemofrecord;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The system-of-record exporter's decision of what to apply next (docs/ARCHITECTURE.md, "System of
 * record"): a pure function of the watermark, the safe timestamp, the journal records read ahead
 * per partition and the local replication log read after the watermark. No I/O, no clock.
 *
 * <p><b>Invariants.</b> A batch holds whole journal records only, every record with a commit
 * timestamp in {@code (watermark, upTo]} and no other, so applying batches one after another
 * applies the journal in commit order with no record skipped or cut: (1) {@code upTo} is at most
 * the safe timestamp, below which every record is durable and known (no record at or below it can
 * still be written); (2) {@code upTo} is at most the last timestamp read of any partition whose
 * read-ahead was cut by its limit, since that partition may hold unread records just above it, and
 * at most the local log's {@code upToTimestamp} (its entries up to there are all read); (3) {@code
 * upTo} is a <i>closed cut</i>: every multi-entity transaction whose decision is in the local log
 * at or below {@code upTo} has a part of every participant the decision names at or below {@code
 * upTo}, so no batch ends between two parts of one transaction and a SQL reader never sees half a
 * transfer. (A transaction commits one journal record per participant entity, each with a commit
 * timestamp of its own; the records carry no part count, the log's decision does: ReceiverCore
 * groups a DC's entries into whole transactions by the same rule.) (4) A batch covers at most
 * {@code maxRecords} records, except that a transaction is never cut to keep to it: when no closed
 * cut lies within the first {@code maxRecords} records, the batch runs to the first closed cut after
 * them. Timestamps are unique node-wide (one clock ticks records, parts and decisions), so a cut
 * between two timestamps is exact. Replaying a batch is harmless: its rows carry their versions
 * and the shell's writes are guarded by them.
 *
 * <p>The earlier rule, "a batch ends before the first record of a transaction whose commit decision
 * the store still holds", is gone: (3) implies it (a part not committed yet has a timestamp above
 * the safe timestamp, so its decision's span is open and no cut at or above the decision is
 * closed), and it could not see a cut by (2) or (4) between two parts already committed.
 *
 * <p><b>Limits of the rule.</b> Only this node's local origin is read: a journal record applying
 * another data centre's transaction ({@code originDc} not the local one) has no entry in the local
 * log, so it never holds a batch back and never makes one wait (a remote multi-entity transaction
 * may be cut: the system of record is single-DC for now). Parts whose decision is at or below the
 * watermark (only after an initial export, whose timestamp is the safe timestamp, not a closed cut)
 * are read as single-entity transactions.
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

  /** What to do next: apply a {@link Batch}, wait ({@link NothingYet}) or {@link ReadFurther}. */
  public sealed interface Plan {}

  /**
   * A batch to apply in one PostgreSQL transaction.
   *
   * @param upTo the watermark once it is applied: every record at or below it is in the batch or
   *     an earlier one; a closed cut
   * @param entities every entity written by the batch's records, in last-written order, with the
   *     origin DC of its last record in the batch
   * @param records how many journal records it covers
   * @param firstCommitTimestamp the commit timestamp of its first (oldest) record
   * @param nextSequences per partition, the sequence after the last record taken (absent: none
   *     taken)
   * @param cutInside whether it ends inside a transaction (only when {@code readAheadAtLimit}
   *     allowed it, see {@link #next})
   */
  public record Batch(long upTo, Map<EntityId, Integer> entities, int records,
      long firstCommitTimestamp, Map<Integer, Long> nextSequences, boolean cutInside)
      implements Plan {}

  /**
   * Nothing to apply yet: no record at or below the bounds, or the oldest transaction waiting has
   * a part not committed yet (it is above the safe timestamp).
   */
  public record NothingYet() implements Plan {}

  /**
   * No closed cut lies within what was read, and a read was cut by its limit: the transaction in
   * the way ends beyond it. Read again with larger limits.
   */
  public record ReadFurther() implements Plan {}

  /**
   * The next step.
   *
   * @param watermark every record at or below it was applied; records at or below it in {@code
   *     ahead} are skipped (a replay after a restart reads from the sequence after it)
   * @param safeTimestamp every record at or below it is durable and read-ahead-able
   * @param ahead per partition (index = partition), its records from its cursor on
   * @param localLog the local origin's replication log read after {@code watermark}, taken after
   *     {@code safeTimestamp} (so its {@code upToTimestamp} is at least that, unless cut)
   * @param maxRecords the most records one batch covers ({@code
   *     troupe.system-of-record.batch-max-records}), unless one transaction is larger
   * @param readAheadAtLimit the reads are as large as they may be ({@code
   *     troupe.system-of-record.read-ahead-max-records}): when a read's limit hides the end of the
   *     transaction in the way, cut it by size (marked {@link Batch#cutInside}) rather than stall
   */
  public static Plan next(long watermark, long safeTimestamp, List<PartitionAhead> ahead,
      ReplicationBatch localLog, int maxRecords, boolean readAheadAtLimit) {
    Invariants.check(maxRecords >= 1, "a batch covers at least one record, not %d", maxRecords);
    long bound = Math.min(safeTimestamp, localLog.upToTimestamp());
    for (PartitionAhead partition : ahead) {
      if (partition.cut() && !partition.records().isEmpty()) {
        bound = Math.min(bound, partition.records().getLast().commitTimestamp());
      }
    }
    boolean readCut = bound < safeTimestamp;
    List<PendingRecord> merged = merge(watermark, bound, ahead);
    if (merged.isEmpty()) {
      return readCut && !readAheadAtLimit ? new ReadFurther() : new NothingYet();
    }
    List<long[]> open = openSpans(localLog, bound);
    // The largest closed cut within the first maxRecords records (up to the next record's
    // timestamp, or the bound once every record is in).
    int sized = Math.min(maxRecords, merged.size());
    long limit = sized == merged.size() ? bound : merged.get(sized).commitTimestamp() - 1;
    long upTo = closedAtOrBelow(open, limit);
    if (upTo < merged.getFirst().commitTimestamp()) {
      // A transaction larger than the batch: run to its end, the first closed cut after the
      // first record, if it is within what was read.
      long end = closedAtOrAbove(open, merged.getFirst().commitTimestamp());
      if (end <= bound) {
        int taken = countAtOrBelow(merged, end);
        long next = taken == merged.size() ? bound : merged.get(taken).commitTimestamp() - 1;
        upTo = closedAtOrBelow(open, next);
      } else if (!readCut) {
        return new NothingYet(); // a part is still being committed
      } else if (!readAheadAtLimit) {
        return new ReadFurther();
      } else {
        return batch(merged.subList(0, sized), limit, true);
      }
    }
    return batch(merged.subList(0, countAtOrBelow(merged, upTo)), upTo, false);
  }

  /** The k-way merge, in commit order, of the records in {@code (watermark, bound]}. */
  private static List<PendingRecord> merge(long watermark, long bound,
      List<PartitionAhead> ahead) {
    int[] positions = new int[ahead.size()];
    List<PendingRecord> merged = new ArrayList<>();
    long previous = watermark;
    while (true) {
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
        return merged;
      }
      PendingRecord record = ahead.get(best).records().get(positions[best]++);
      Invariants.check(record.commitTimestamp() > previous,
          "journal records merge in commit order: %d after %d", record.commitTimestamp(), previous);
      previous = record.commitTimestamp();
      merged.add(record);
    }
  }

  /**
   * The spans no cut may fall in, merged, sorted and disjoint: per decision at or below {@code
   * bound}, {@code [decision, last part)}, or {@code [decision, MAX)} while a named participant has
   * no part in the log read. A cut {@code t} is closed when no span holds it.
   */
  private static List<long[]> openSpans(ReplicationBatch localLog, long bound) {
    Map<Long, ReplicationEntry.Decision> decisions = new LinkedHashMap<>();
    Map<Long, Map<EntityId, Long>> parts = new HashMap<>();
    for (ReplicationEntry entry : localLog.entries()) {
      switch (entry) {
        case ReplicationEntry.Decision decision -> {
          if (decision.timestamp() <= bound) {
            decisions.put(decision.transactionId(), decision);
          }
        }
        case ReplicationEntry.Part part -> parts
            .computeIfAbsent(part.transactionId(), ignored -> new HashMap<>())
            .merge(part.entity(), part.timestamp(), Math::max);
      }
    }
    List<long[]> spans = new ArrayList<>();
    for (ReplicationEntry.Decision decision : decisions.values()) {
      Map<EntityId, Long> committed = parts.getOrDefault(decision.transactionId(), Map.of());
      long last = decision.timestamp();
      for (EntityId participant : Set.copyOf(decision.participants())) {
        Long at = committed.get(participant);
        last = at == null ? Long.MAX_VALUE : Math.max(last, at);
        if (at == null) {
          break;
        }
      }
      if (last > decision.timestamp()) {
        spans.add(new long[] {decision.timestamp(), last});
      }
    }
    spans.sort((a, b) -> Long.compare(a[0], b[0]));
    List<long[]> merged = new ArrayList<>();
    for (long[] span : spans) {
      if (!merged.isEmpty() && span[0] <= merged.getLast()[1]) {
        merged.getLast()[1] = Math.max(merged.getLast()[1], span[1]);
      } else {
        merged.add(span.clone());
      }
    }
    return merged;
  }

  /** The largest closed cut at or below {@code t}. */
  private static long closedAtOrBelow(List<long[]> open, long t) {
    for (long[] span : open) {
      if (span[0] <= t && t < span[1]) {
        return span[0] - 1; // spans are disjoint and apart: just before one is closed
      }
    }
    return t;
  }

  /** The smallest closed cut at or above {@code t} ({@code MAX_VALUE} if none is known). */
  private static long closedAtOrAbove(List<long[]> open, long t) {
    for (long[] span : open) {
      if (span[0] <= t && t < span[1]) {
        return span[1];
      }
    }
    return t;
  }

  private static int countAtOrBelow(List<PendingRecord> merged, long timestamp) {
    int count = 0;
    while (count < merged.size() && merged.get(count).commitTimestamp() <= timestamp) {
      count++;
    }
    return count;
  }

  private static Batch batch(List<PendingRecord> records, long upTo, boolean cutInside) {
    Map<EntityId, Integer> entities = new LinkedHashMap<>();
    Map<Integer, Long> nextSequences = new LinkedHashMap<>();
    for (PendingRecord record : records) {
      for (EntityId entity : record.entities()) {
        entities.remove(entity); // re-inserted below: the map keeps the origin of the last write
        entities.put(entity, record.originDc());
      }
      nextSequences.put(record.partition(), record.sequence() + 1);
    }
    return new Batch(upTo, entities, records.size(), records.getFirst().commitTimestamp(),
        nextSequences, cutInside);
  }
}
