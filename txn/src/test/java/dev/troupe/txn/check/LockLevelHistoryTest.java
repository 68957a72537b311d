package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.troupe.txn.check.LockLevelHistory.EntityAccess;
import dev.troupe.txn.check.RecordedTransaction.Outcome;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The serialization graph at the granularity of the locks: the shape of the false alarm of issue
 * 16 (two transactions writing disjoint members of two carts, committed in opposite orders) is a
 * G0 cycle per entity and no cycle per key; the same shape on one shared key stays a cycle.
 */
class LockLevelHistoryTest {
  private static EntityAccess write(String entity, boolean perKey, long version, String key) {
    return new EntityAccess(entity, perKey, -1, Set.of(), false, version, Set.of(key), false);
  }

  private static LockLevelHistory.Transaction transaction(String id, EntityAccess... accesses) {
    return new LockLevelHistory.Transaction(id, Outcome.COMMITTED, List.of(accesses));
  }

  private static SerializabilityChecker.Result crossedCommits(boolean perKey, String secondKey) {
    return SerializabilityChecker.check(LockLevelHistory.of(List.of(
        transaction("delete-p1", write("Cart/c1", perKey, 10, "item[p1]"),
            write("Cart/c2", perKey, 21, "item[p1]")),
        transaction("price-p0", write("Cart/c1", perKey, 11, secondKey),
            write("Cart/c2", perKey, 20, secondKey)))));
  }

  @Test
  void disjointMembersCommittedInEitherOrderAreNoCycleUnderKeyLocks() {
    assertInstanceOf(SerializabilityChecker.Serializable.class,
        crossedCommits(true, "item[p0]"));
  }

  @Test
  void theSameShapeIsAWriteCycleUnderEntityLocks() {
    var violation = assertInstanceOf(SerializabilityChecker.Violation.class,
        crossedCommits(false, "item[p0]"));
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
  }

  @Test
  void writesOfOneKeyInOppositeOrdersStayAWriteCycle() {
    var violation = assertInstanceOf(SerializabilityChecker.Violation.class,
        crossedCommits(true, "item[p1]"));
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
  }

  @Test
  void aWholeEntityWriteConflictsWithEveryKey() {
    // A delete of c1 between two writes of disjoint members, and the other order on c2.
    var violation = assertInstanceOf(SerializabilityChecker.Violation.class,
        SerializabilityChecker.check(LockLevelHistory.of(List.of(
            transaction("delete", new EntityAccess("Cart/c1", true, -1, Set.of(), false, 10,
                Set.of(), true), write("Cart/c2", true, 21, "item[p1]")),
            transaction("price", write("Cart/c1", true, 11, "item[p0]"),
                write("Cart/c2", true, 20, "item[p1]"))))));
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
  }

  @Test
  void aKeyIsReadAtItsLatestWriteNotAfterTheEntityVersionRead() {
    // The reader read the entity at 15: key a's latest write by then is 10 (by w1), so it read
    // w1's a, and a's next version (20, by w2) follows it: wr w1 -> reader, rw reader -> w2.
    var serializable = assertInstanceOf(SerializabilityChecker.Serializable.class,
        SerializabilityChecker.check(LockLevelHistory.of(List.of(
            transaction("w1", write("E", true, 10, "a")),
            transaction("other", write("E", true, 12, "b")),
            transaction("w2", write("E", true, 20, "a")),
            transaction("reader", new EntityAccess("E", true, 15, Set.of("a"), false, 0,
                Set.of(), false))))));
    assertEquals(1, serializable.writeReadEdges());
    assertEquals(1, serializable.readWriteEdges());
  }
}
