package dev.troupe.storage.systemofrecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.storage.systemofrecord.ExportPlanner.Batch;
import dev.troupe.storage.systemofrecord.ExportPlanner.NothingYet;
import dev.troupe.storage.systemofrecord.ExportPlanner.PartitionAhead;
import dev.troupe.storage.systemofrecord.ExportPlanner.PendingRecord;
import dev.troupe.storage.systemofrecord.ExportPlanner.Plan;
import dev.troupe.storage.systemofrecord.ExportPlanner.ReadFurther;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The exporter's choice of batches: commit order, whole records, safe bounds, idempotent replay,
 * and closed cuts: no batch ends between two parts of one multi-entity transaction.
 */
class ExportPlannerTest {
  private static final int DC = 0;
  /** A log read with nothing in it: no multi-entity transaction, nothing holds a cut back. */
  private static final ReplicationBatch NO_DECISIONS =
      new ReplicationBatch(DC, List.of(), Long.MAX_VALUE);

  private static EntityId account(String id) {
    return new EntityId("Account", id);
  }

  private static PendingRecord record(int partition, long sequence, long timestamp,
      String... ids) {
    return recordOf(partition, sequence, timestamp, timestamp, ids);
  }

  private static PendingRecord recordOf(int partition, long sequence, long transaction,
      long timestamp, String... ids) {
    List<EntityId> entities = new ArrayList<>();
    for (String id : ids) {
      entities.add(account(id));
    }
    return new PendingRecord(partition, sequence, transaction, timestamp, DC, entities);
  }

  private static PartitionAhead ahead(boolean cut, PendingRecord... records) {
    return new PartitionAhead(List.of(records), cut);
  }

  private static Batch batch(Plan plan) {
    return assertInstanceOf(Batch.class, plan);
  }

  private static Plan next(long watermark, long safe, List<PartitionAhead> ahead,
      int maxRecords) {
    return ExportPlanner.next(watermark, safe, ahead, NO_DECISIONS, maxRecords, false);
  }

  private static ReplicationEntry decision(long timestamp, long transaction, String... ids) {
    List<EntityId> participants = new ArrayList<>();
    for (String id : ids) {
      participants.add(account(id));
    }
    return new ReplicationEntry.Decision(DC, timestamp, transaction, 0, participants,
        DependencyVector.EMPTY);
  }

  private static ReplicationEntry part(long timestamp, long transaction, String id) {
    return new ReplicationEntry.Part(DC, timestamp, transaction, 0, account(id), List.of(),
        DependencyVector.EMPTY);
  }

  @Test
  void mergesPartitionsInCommitOrderUpToTheSafeTimestamp() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "a")));
    Batch batch = batch(next(0, 35, ahead, 100));
    assertEquals(35, batch.upTo(), "drained: the watermark reaches the safe timestamp");
    assertEquals(3, batch.records());
    assertEquals(10, batch.firstCommitTimestamp());
    // The entity order is last-written: a, c, then a again moves a after c.
    assertEquals(List.of(account("c"), account("a")), List.copyOf(batch.entities().keySet()));
    assertEquals(Map.of(0, 1L, 1, 2L), batch.nextSequences());
  }

  @Test
  void aBatchCutByItsSizeEndsBeforeTheNextRecordAndTheNextTakesTheRest() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "d")));
    Batch first = batch(next(0, 100, ahead, 2));
    assertEquals(29, first.upTo(), "up to just before the record it could not take");
    assertEquals(2, first.records());
    Batch second = batch(next(first.upTo(), 100, ahead, 2));
    assertEquals(100, second.upTo(), "drained: up to the safe timestamp");
    assertEquals(List.of(account("d"), account("b")), List.copyOf(second.entities().keySet()));
    assertInstanceOf(NothingYet.class, next(second.upTo(), 100, ahead, 2));
  }

  @Test
  void aPartitionWhoseReadWasCutBoundsTheBatch() {
    // Partition 0's read-ahead stopped at 15: it may hold a record at 16 not read yet, so nothing
    // above 15 may be applied, though partition 1 has a record at 20 and the safe bound is 100.
    List<PartitionAhead> ahead = List.of(
        ahead(true, record(0, 0, 10, "a"), record(0, 1, 15, "b")),
        ahead(false, record(1, 0, 20, "c")));
    Batch batch = batch(next(0, 100, ahead, 100));
    assertEquals(15, batch.upTo());
    assertEquals(2, batch.records());
  }

  @Test
  void nothingAtOrBelowTheSafeTimestampIsNoBatch() {
    List<PartitionAhead> ahead = List.of(ahead(false, record(0, 0, 50, "a")), ahead(false));
    assertInstanceOf(NothingYet.class, next(0, 49, ahead, 10));
    assertEquals(50, batch(next(0, 50, ahead, 10)).upTo());
  }

  @Test
  void replayFromAWatermarkSkipsWhatWasAppliedAndChoosesTheSameBatch() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "d")));
    Batch first = batch(next(10, 35, ahead, 100));
    Batch again = batch(next(10, 35, ahead, 100));
    assertEquals(first, again, "a pure function: a replay after a crash decides the same");
    assertEquals(2, first.records(), "the record at the watermark was applied already");
  }

  /**
   * Transaction 100 (decision at 11) commits a at 20 and b at 40; transaction 200 (decision at
   * 41) commits c at 50, d at 60 and e at 70; single-entity records at 10, 30 and 80. The closed
   * cuts: below 11, 40, and from 70 on.
   */
  private static List<PartitionAhead> interleaved() {
    return List.of(
        ahead(false, record(0, 0, 10, "x"), recordOf(0, 1, 100, 20, "a"),
            recordOf(0, 2, 200, 50, "c"), recordOf(0, 3, 200, 70, "e")),
        ahead(false, record(1, 0, 30, "y"), recordOf(1, 1, 100, 40, "b"),
            recordOf(1, 2, 200, 60, "d"), record(1, 3, 80, "z")));
  }

  private static ReplicationBatch interleavedLog(long after, long upTo) {
    List<ReplicationEntry> entries = new ArrayList<>(List.of(part(10, 10, "x"),
        decision(11, 100, "a", "b"), part(20, 100, "a"), part(30, 30, "y"),
        part(40, 100, "b"), decision(41, 200, "c", "d", "e"), part(50, 200, "c"),
        part(60, 200, "d"), part(70, 200, "e"), part(80, 80, "z")));
    entries.removeIf(entry -> entry.timestamp() <= after || entry.timestamp() > upTo);
    return new ReplicationBatch(DC, entries, upTo);
  }

  @Test
  void aSizeCutNeverFallsBetweenTwoPartsOfATransaction() {
    for (int maxRecords = 1; maxRecords <= 3; maxRecords++) {
      long watermark = 0;
      List<Long> upTos = new ArrayList<>();
      List<Integer> sizes = new ArrayList<>();
      while (true) {
        Plan plan = ExportPlanner.next(watermark, 100, interleaved(),
            interleavedLog(watermark, 100), maxRecords, false);
        if (plan instanceof NothingYet) {
          break;
        }
        Batch batch = batch(plan);
        upTos.add(batch.upTo());
        sizes.add(batch.records());
        watermark = batch.upTo();
      }
      for (long upTo : upTos) {
        assertTrue(upTo < 11 || upTo == 40 || upTo >= 70, "maxRecords " + maxRecords
            + ": a cut inside a transaction at " + upTo + " in " + upTos);
      }
      assertEquals(100, watermark, "every record applied: " + upTos);
      assertEquals(8, sizes.stream().mapToInt(Integer::intValue).sum(), "each record once");
      System.out.println("maxRecords " + maxRecords + ": batches up to " + upTos + ", sizes "
          + sizes);
    }
    // With one record per batch: x alone, then no batch may end at a (20) or y (30), inside
    // transaction 100, so the next runs to its end at 40 and holds a, y, b: a transaction larger
    // than the limit comes whole; 41 is transaction 200's decision, so not 49.
    Batch first = batch(ExportPlanner.next(0, 100, interleaved(), interleavedLog(0, 100), 1,
        false));
    assertEquals(10, first.upTo());
    Batch second = batch(ExportPlanner.next(10, 100, interleaved(), interleavedLog(10, 100), 1,
        false));
    assertEquals(3, second.records());
    assertEquals(40, second.upTo());
    Batch third = batch(ExportPlanner.next(40, 100, interleaved(), interleavedLog(40, 100), 1,
        false));
    assertEquals(3, third.records());
    assertEquals(79, third.upTo(), "up to just before the next record, z at 80");
  }

  @Test
  void aBatchEndsBeforeADecisionWhosePartIsNotCommittedYet() {
    // Safe at 45: transaction 200 was decided at 41, c is not committed yet (above the safe
    // timestamp, not in the log read): the batch stops before its decision.
    Batch batch = batch(ExportPlanner.next(0, 45, interleaved(), interleavedLog(0, 45), 100,
        false));
    assertEquals(40, batch.upTo());
    assertEquals(4, batch.records());
    assertInstanceOf(NothingYet.class,
        ExportPlanner.next(40, 45, interleaved(), interleavedLog(40, 45), 100, false));
  }

  @Test
  void aReadCutInsideATransactionAsksToReadFurther() {
    // Partition 1's read stopped at 30 (y) and the log's at 20: transaction 100's part b (40) is
    // beyond both, and nothing before the decision at 11 is left to apply after x.
    List<PartitionAhead> ahead = List.of(
        ahead(false, recordOf(0, 1, 100, 20, "a")),
        ahead(true, record(1, 0, 30, "y")));
    assertInstanceOf(ReadFurther.class,
        ExportPlanner.next(10, 100, ahead, interleavedLog(10, 30), 1, false));
    // At the read-ahead limit it cuts by size rather than stall, and says so.
    Batch cut = batch(ExportPlanner.next(10, 100, ahead, interleavedLog(10, 30), 1, true));
    assertTrue(cut.cutInside());
    assertEquals(1, cut.records());
  }

  @Test
  void aRecordFromAnotherDataCentreHasNoDecisionAndHoldsNothingBack() {
    // Records applying other DCs' transactions are not in the local log: taken as they come.
    List<PartitionAhead> ahead = List.of(
        ahead(false, new PendingRecord(0, 0, 5, 10, 7, List.of(account("a"))),
            new PendingRecord(0, 1, 5, 20, 7, List.of(account("b")))));
    Batch batch = batch(ExportPlanner.next(0, 100, ahead,
        new ReplicationBatch(DC, List.of(), 100), 1, false));
    assertEquals(19, batch.upTo());
    assertEquals(Map.of(account("a"), 7), batch.entities());
  }

  /**
   * Random histories of single-entity commits and 2- and 3-part transactions interleaved across 3
   * partitions, a safe timestamp that moves up, reads cut by a small limit: every batch ends at a
   * closed cut, and every record is applied exactly once, in commit order.
   */
  @Test
  void randomInterleavingsNeverSplitATransaction() {
    long base = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("ExportPlannerTest.randomInterleavingsNeverSplitATransaction seed " + base);
    for (int run = 0; run < 300; run++) {
      long seed = base + run;
      try {
        randomHistory(new Random(seed));
      } catch (AssertionError failure) {
        throw new AssertionError("seed " + seed + ": " + failure.getMessage(), failure);
      }
    }
  }

  private static void randomHistory(Random random) {
    int partitions = 3;
    List<List<PendingRecord>> journal = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      journal.add(new ArrayList<>());
    }
    List<ReplicationEntry> log = new ArrayList<>();
    /** Per transaction with parts still to commit: its id and the entities left. */
    List<long[]> open = new ArrayList<>();
    Map<Long, List<String>> pending = new HashMap<>();
    Map<Long, long[]> spans = new HashMap<>(); // transaction: decision, last part
    long clock = 0;
    int entities = 0;
    int events = 20 + random.nextInt(60);
    for (int e = 0; e < events || !open.isEmpty(); e++) {
      clock += 1 + random.nextInt(3);
      boolean startNew = e < events && (open.isEmpty() || random.nextInt(3) > 0);
      if (startNew && random.nextBoolean()) {
        String entity = "s" + entities++;
        int p = random.nextInt(partitions);
        journal.get(p).add(recordOf(p, journal.get(p).size(), clock, clock, entity));
        log.add(part(clock, clock, entity));
      } else if (startNew) {
        int parts = 2 + random.nextInt(2);
        List<String> participants = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
          participants.add("m" + entities++);
        }
        long transaction = clock;
        log.add(decision(clock, transaction, participants.toArray(String[]::new)));
        pending.put(transaction, new ArrayList<>(participants));
        open.add(new long[] {transaction});
        spans.put(transaction, new long[] {clock, clock});
      } else {
        long[] chosen = open.get(random.nextInt(open.size()));
        List<String> left = pending.get(chosen[0]);
        String entity = left.remove(random.nextInt(left.size()));
        int p = random.nextInt(partitions);
        journal.get(p).add(recordOf(p, journal.get(p).size(), chosen[0], clock, entity));
        log.add(part(clock, chosen[0], entity));
        spans.get(chosen[0])[1] = clock;
        if (left.isEmpty()) {
          open.remove(chosen);
        }
      }
    }
    long end = clock;
    int maxRecords = 1 + random.nextInt(4);
    int firstReadLimit = 1 + random.nextInt(4);
    long watermark = 0;
    long safe = 0;
    int readLimit = firstReadLimit;
    List<Long> applied = new ArrayList<>();
    for (int step = 0; step < 10_000 && watermark < end; step++) {
      safe = Math.min(end, safe + random.nextInt(8));
      final long bound = safe;
      final long after = watermark;
      List<PartitionAhead> ahead = new ArrayList<>();
      for (List<PendingRecord> records : journal) {
        // The journal as a reader sees it: records above the safe timestamp may be there too.
        List<PendingRecord> read = records.stream()
            .filter(record -> record.commitTimestamp() > after
                && record.commitTimestamp() <= bound + 2)
            .limit(readLimit).toList();
        ahead.add(new PartitionAhead(read, read.size() == readLimit));
      }
      List<ReplicationEntry> entries = log.stream()
          .filter(entry -> entry.timestamp() > after && entry.timestamp() <= bound)
          .limit(2L * readLimit).toList();
      long logUpTo = entries.size() == 2 * readLimit ? entries.getLast().timestamp() : bound;
      Plan plan = ExportPlanner.next(watermark, safe, ahead,
          new ReplicationBatch(DC, entries, logUpTo), maxRecords, false);
      switch (plan) {
        case ReadFurther ignored -> readLimit *= 2;
        case NothingYet ignored -> { }
        case Batch batch -> {
          assertTrue(batch.upTo() > watermark && batch.upTo() <= safe,
              "batch up to " + batch.upTo() + " after " + watermark + ", safe " + safe);
          for (long[] span : spans.values()) {
            assertTrue(batch.upTo() < span[0] || batch.upTo() >= span[1],
                "a batch up to " + batch.upTo() + " splits the transaction decided at "
                    + span[0] + " and ending at " + span[1]);
          }
          // The batch is every record in (watermark, upTo], and the cursors move past them.
          List<Long> taken = new ArrayList<>();
          for (int p = 0; p < partitions; p++) {
            long last = -1;
            for (PendingRecord record : journal.get(p)) {
              if (record.commitTimestamp() > watermark
                  && record.commitTimestamp() <= batch.upTo()) {
                taken.add(record.commitTimestamp());
                last = record.sequence();
              }
            }
            assertEquals(last < 0 ? null : last + 1, batch.nextSequences().get(p),
                "partition " + p + "'s next sequence");
          }
          assertEquals(taken.size(), batch.records(), "the records in the batch");
          taken.sort(Long::compare);
          applied.addAll(taken);
          watermark = batch.upTo();
          readLimit = firstReadLimit;
        }
      }
    }
    assertEquals(end, watermark, "the watermark reaches the end of the history");
    List<Long> expected = new ArrayList<>();
    for (List<PendingRecord> records : journal) {
      records.forEach(record -> expected.add(record.commitTimestamp()));
    }
    expected.sort(Long::compare);
    assertEquals(expected, applied, "every record applied exactly once, in commit order");
  }
}
