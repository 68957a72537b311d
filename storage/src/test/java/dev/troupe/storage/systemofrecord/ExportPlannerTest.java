package dev.troupe.storage.systemofrecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.troupe.model.EntityId;
import dev.troupe.storage.systemofrecord.ExportPlanner.Batch;
import dev.troupe.storage.systemofrecord.ExportPlanner.PartitionAhead;
import dev.troupe.storage.systemofrecord.ExportPlanner.PendingRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The exporter's choice of batches: commit order, whole records, safe bounds, idempotent replay. */
class ExportPlannerTest {
  private static final java.util.function.LongPredicate ALL_WHOLE = transaction -> true;

  private static PendingRecord record(int partition, long sequence, long timestamp,
      String... ids) {
    List<EntityId> entities = new ArrayList<>();
    for (String id : ids) {
      entities.add(new EntityId("Account", id));
    }
    return new PendingRecord(partition, sequence, timestamp, timestamp, 0, entities);
  }

  private static PartitionAhead ahead(boolean cut, PendingRecord... records) {
    return new PartitionAhead(List.of(records), cut);
  }

  @Test
  void mergesPartitionsInCommitOrderUpToTheSafeTimestamp() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "a")));
    Batch batch = ExportPlanner.next(0, 35, ahead, 100, ALL_WHOLE);
    assertEquals(35, batch.upTo(), "drained: the watermark reaches the safe timestamp");
    assertEquals(3, batch.records());
    assertEquals(10, batch.firstCommitTimestamp());
    // The entity order is last-written: a, c, then a again moves a after c.
    assertEquals(List.of(new EntityId("Account", "c"), new EntityId("Account", "a")),
        List.copyOf(batch.entities().keySet()));
    assertEquals(Map.of(0, 1L, 1, 2L), batch.nextSequences());
  }

  @Test
  void aBatchCutByItsSizeEndsAtItsLastRecordAndTheNextTakesTheRest() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "d")));
    Batch first = ExportPlanner.next(0, 100, ahead, 2, ALL_WHOLE);
    assertEquals(20, first.upTo());
    assertEquals(2, first.records());
    Batch second = ExportPlanner.next(first.upTo(), 100, ahead, 2, ALL_WHOLE);
    assertEquals(100, second.upTo(), "drained: up to the safe timestamp");
    assertEquals(List.of(new EntityId("Account", "d"), new EntityId("Account", "b")),
        List.copyOf(second.entities().keySet()));
    assertNull(ExportPlanner.next(second.upTo(), 100, ahead, 2, ALL_WHOLE));
  }

  @Test
  void aPartitionWhoseReadWasCutBoundsTheBatch() {
    // Partition 0's read-ahead stopped at 15: it may hold a record at 16 not read yet, so nothing
    // above 15 may be applied, though partition 1 has a record at 20 and the safe bound is 100.
    List<PartitionAhead> ahead = List.of(
        ahead(true, record(0, 0, 10, "a"), record(0, 1, 15, "b")),
        ahead(false, record(1, 0, 20, "c")));
    Batch batch = ExportPlanner.next(0, 100, ahead, 100, ALL_WHOLE);
    assertEquals(15, batch.upTo());
    assertEquals(2, batch.records());
  }

  @Test
  void nothingAtOrBelowTheSafeTimestampIsNoBatch() {
    List<PartitionAhead> ahead = List.of(ahead(false, record(0, 0, 50, "a")), ahead(false));
    assertNull(ExportPlanner.next(0, 49, ahead, 10, ALL_WHOLE));
    assertEquals(50, ExportPlanner.next(0, 50, ahead, 10, ALL_WHOLE).upTo());
  }

  @Test
  void replayFromAWatermarkSkipsWhatWasAppliedAndChoosesTheSameBatch() {
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "d")));
    Batch first = ExportPlanner.next(10, 35, ahead, 100, ALL_WHOLE);
    Batch again = ExportPlanner.next(10, 35, ahead, 100, ALL_WHOLE);
    assertEquals(first, again, "a pure function: a replay after a crash decides the same");
    assertEquals(2, first.records(), "the record at the watermark was applied already");
  }

  @Test
  void aBatchEndsBeforeATransactionNotKnownWhole() {
    // Record 30 is a part of transaction 30 whose decision is still recorded: another part may be
    // committed later with a higher timestamp, so the watermark must not pass 30 yet.
    List<PartitionAhead> ahead = List.of(
        ahead(false, record(0, 0, 10, "a"), record(0, 1, 40, "b")),
        ahead(false, record(1, 0, 20, "c"), record(1, 1, 30, "d")));
    Batch batch = ExportPlanner.next(0, 100, ahead, 100, transaction -> transaction != 30);
    assertEquals(20, batch.upTo());
    assertEquals(2, batch.records());
    assertNull(ExportPlanner.next(20, 100, ahead, 100, transaction -> transaction != 30));
  }
}
