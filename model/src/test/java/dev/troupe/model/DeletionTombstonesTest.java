package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.ValueEncoding;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Stamp;
import dev.troupe.model.value.Tag;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Tombstones and observed-remove deletions (docs/ARCHITECTURE.md, "Deletes across data centres"). */
class DeletionTombstonesTest {
  private static final int HERE = 1;
  private static final int THERE = 2;

  private static EntityState written() {
    return EntityState.ABSENT.apply(List.of(new Operation.Assign("r", Json.parse("1")),
        new Operation.Increment("n", 5), new Operation.AddElement("s", Json.parse("\"a\""),
            new Tag(HERE, 1, 0))), 5, HERE);
  }

  @Test
  void aRegisterDeletionLeavesATombstoneThatAnOlderWriteLosesTo() {
    EntityState deleted = written().apply(List.of(new Operation.DeleteKey("r")), 10, HERE);
    assertNull(deleted.get("r"));
    assertEquals(Map.of("r", new Stamp(10, HERE)), deleted.tombstones());
    assertTrue(deleted.exists());
    EntityState older = deleted.apply(List.of(
        new Operation.AssignReplicated("r", Json.parse("2"), 9, THERE)), 11, HERE);
    assertNull(older.get("r"));
    EntityState newer = deleted.apply(List.of(
        new Operation.AssignReplicated("r", Json.parse("3"), 10, THERE)), 11, HERE);
    assertEquals(new RegisterValue(Json.parse("3"), 10, THERE), newer.get("r"));
    assertEquals(Map.of(), newer.tombstones());
  }

  @Test
  void aReplicatedDeletionOlderThanTheRegisterChangesNothing() {
    EntityState state = written().apply(List.of(
        new Operation.DeleteKeyReplicated("r", 4, THERE)), 6, HERE);
    assertEquals(Json.parse("1"), state.get("r").toJson());
    assertEquals(Map.of(), state.tombstones());
  }

  @Test
  void anEntityTombstoneDropsOlderWritesAndTheEntityStaysDeletedOnASingleNode() {
    EntityState deleted = written().apply(Deletions.ofEntity(written()), 10, HERE);
    assertFalse(deleted.exists());
    assertEquals(Map.of(), deleted.values());
    assertEquals(new Stamp(10, HERE), deleted.entityTombstone());
    EntityState again = deleted.apply(List.of(new Operation.Assign("r", Json.parse("7"))), 11,
        HERE);
    assertTrue(again.exists());
    assertEquals(Json.parse("7"), again.get("r").toJson());
  }

  @Test
  void aWriteConcurrentWithAnEntityDeletionKeepsTheEntityEvenWhenItsRegisterLoses() {
    EntityState observed = written();
    List<Operation> deletion = Deletions.ofEntity(observed);
    // The deletion arrives from there, stamped (10, THERE); here a write at (8, HERE) was made
    // concurrently, and an increment.
    EntityState here = observed.apply(List.of(new Operation.Assign("q", Json.parse("1")),
        new Operation.Increment("n", 2)), 8, HERE);
    List<Operation> replicated = deletion.stream().map(operation ->
        operation instanceof Operation.DeleteEntity delete
            ? new Operation.DeleteEntityReplicated(10, THERE, delete.observedWrites())
            : operation).toList();
    EntityState after = here.apply(replicated, 12, HERE);
    assertNull(after.get("q"));
    assertNull(after.get("r"));
    assertEquals(2, ((CounterValue) after.get("n")).total());
    assertTrue(after.exists());
  }

  @Test
  void concurrentCounterDeletionsRemoveWhatTheyObservedOnce() {
    EntityState state = written();
    Operation first = Deletions.ofKey(state, "n");
    Operation second = Deletions.ofKey(state, "n");
    EntityState incremented = state.apply(List.of(
        new Operation.IncrementReplicated("n", 3, THERE)), 6, HERE);
    EntityState after = incremented.apply(List.of(first), 7, HERE).apply(List.of(second), 8, HERE);
    assertEquals(3, ((CounterValue) after.get("n")).total());
    EntityState gone = after.apply(List.of(Deletions.ofKey(after, "n")), 9, HERE);
    assertNull(gone.get("n"));
    assertEquals(new CounterValue(Map.of(HERE, 5L, THERE, 3L), Map.of()),
        gone.deletedCounters().get("n"));
  }

  @Test
  void aSetDeletionKeepsConcurrentAdditions() {
    EntityState state = written();
    Operation deletion = Deletions.ofKey(state, "s");
    EntityState added = state.apply(List.of(new Operation.AddElement("s", Json.parse("\"b\""),
        new Tag(THERE, 9, 0))), 6, HERE);
    EntityState after = added.apply(List.of(deletion), 7, HERE);
    assertEquals(Json.parse("[\"b\"]"), after.get("s").toJson());
    assertNull(state.apply(List.of(deletion), 7, HERE).get("s"));
    assertTrue(after.get("s") instanceof SetValue);
  }

  @Test
  void tombstonesAtOrBelowTheStableTimestampAreDropped() {
    EntityState deleted = written().apply(List.of(new Operation.DeleteKey("r")), 10, HERE)
        .apply(List.of(new Operation.DeleteEntityReplicated(12, THERE, Map.of())), 13, HERE);
    assertEquals(new Stamp(12, THERE), deleted.entityTombstone());
    assertSame(deleted, deleted.withoutTombstonesUpTo(11));
    EntityState pruned = deleted.withoutTombstonesUpTo(12);
    assertNull(pruned.entityTombstone());
    assertEquals(Map.of(), pruned.tombstones());
  }

  @Test
  void aStateCarriesItsTombstonesAndOldStatesKeepTheirBytes() {
    EntityState state = written().apply(List.of(new Operation.DeleteKey("r"),
        Deletions.ofKey(written(), "n")), 10, HERE)
        .apply(List.of(new Operation.DeleteEntityReplicated(9, THERE, Map.of(HERE, 1L))), 11,
            HERE);
    assertEquals(state, roundTrip(state));
    EntityState plain = new EntityState(Map.of("r", new RegisterValue(Json.parse("1"), 5, HERE)),
        5, true);
    BinaryWriter out = new BinaryWriter(64);
    ValueEncoding.writeState(out, plain);
    // version, exists, one entry: key "r", kind 1 (register), the JSON, stamp: no tombstone bytes
    byte[] bytes = out.toByteArray();
    assertEquals(8 + 1 + 1 + 2 + 1 + 1 + 1 + 8 + 1, bytes.length);
    assertEquals(plain, roundTrip(plain));
  }

  private static EntityState roundTrip(EntityState state) {
    BinaryWriter out = new BinaryWriter(64);
    ValueEncoding.writeState(out, state);
    byte[] bytes = out.toByteArray();
    BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
    return ValueEncoding.readState(in);
  }

  @Test
  void operationsRoundTrip() {
    for (Operation operation : List.of(new Operation.DeleteKeyReplicated("k", 7, THERE),
        new Operation.DeleteCounter("n", new CounterValue(Map.of(1, 3L), Map.of(2, 4L))),
        new Operation.DeleteSet("s", Set.of(new Tag(1, 2, 3), new Tag(2, 2, 0))),
        new Operation.DeleteEntityReplicated(9, THERE, Map.of(1, 2L)),
        new Operation.DeleteEntityReplicated(9, THERE, null),
        new Operation.IncrementReplicated("n", -4, THERE),
        new Operation.DeleteEntity(Map.of(1, 5L)), new Operation.DeleteEntity())) {
      BinaryWriter out = new BinaryWriter(64);
      ValueEncoding.writeOperation(out, operation);
      byte[] bytes = out.toByteArray();
      BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
          (position, message, cause) -> new IllegalStateException(message, cause));
      assertEquals(operation, ValueEncoding.readOperation(in));
    }
  }
}
