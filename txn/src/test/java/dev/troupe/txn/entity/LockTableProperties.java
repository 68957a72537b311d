package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.entity.LockTable.LockSet;
import dev.troupe.txn.entity.LockTable.Mode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * The lock table's invariants: conflicting locks are never held together; wait-die only lets older
 * transactions wait (so no deadlock across many tables); once holders release, waiters are granted;
 * key-level locks let disjoint keys proceed.
 */
class LockTableProperties {

  private static LockSet keys(Mode mode, String... names) {
    Map<String, Mode> keys = new HashMap<>();
    for (String name : names) {
      keys.put(name, mode);
    }
    return new LockSet(null, keys);
  }

  @Test
  void disjointKeysAndSharedReadsAreGrantedTogether() {
    LockTable<String> table = new LockTable<>();
    assertInstanceOf(LockTable.Outcome.Granted.class, table.request(5, 5, keys(Mode.WRITE, "a"), "t5"));
    assertInstanceOf(LockTable.Outcome.Granted.class, table.request(6, 6, keys(Mode.WRITE, "b"), "t6"));
    assertInstanceOf(LockTable.Outcome.Granted.class, table.request(7, 7, keys(Mode.READ, "c"), "t7"));
    assertInstanceOf(LockTable.Outcome.Granted.class, table.request(8, 8, keys(Mode.READ, "c"), "t8"));
    assertEquals(4, table.holderCount());
    // The whole entity conflicts with every key write.
    assertTrue(table.conflictsWithHolders(LockSet.wholeEntity(Mode.READ)));
    assertFalse(table.conflictsWithHolders(keys(Mode.READ, "c", "d")));
    assertTrue(table.conflictsWithHolders(keys(Mode.WRITE, "c")));
  }

  @Test
  void olderWaitsAndYoungerDies() {
    LockTable<String> table = new LockTable<>();
    table.request(10, 10, LockSet.wholeEntity(Mode.WRITE), "t10");
    assertInstanceOf(LockTable.Outcome.Waiting.class,
        table.request(3, 3, LockSet.wholeEntity(Mode.WRITE), "t3"));
    LockTable.Outcome died = table.request(20, 20, keys(Mode.READ, "x"), "t20");
    assertEquals(new LockTable.Outcome.Died(3), died, "it conflicts with the older waiter too");
    List<LockTable.Grant<String>> granted = table.release(10);
    assertEquals(List.of(new LockTable.Grant<>(3L, "t3")), granted);
    assertTrue(table.holds(3));
    assertTrue(table.release(3).isEmpty());
    assertTrue(table.isEmpty());
  }

  @Test
  void aPlannedRequestWaitsInsteadOfDying() {
    LockTable<String> table = new LockTable<>();
    table.request(10, 1, keys(Mode.WRITE, "a"), "planned-1", false);
    assertInstanceOf(LockTable.Outcome.Waiting.class,
        table.request(11, 2, keys(Mode.WRITE, "a"), "planned-2", false));
    assertInstanceOf(LockTable.Outcome.Died.class,
        table.request(99, 99, keys(Mode.WRITE, "a"), "dynamic"), "a dynamic newcomer still dies");
    assertEquals(List.of(new LockTable.Grant<>(11L, "planned-2")), table.release(10));
  }

  @Test
  void anEarlierPlannedRequestArrivingAfterALaterOneDiesInsteadOfWaitingForIt() {
    // Two sequencers (two nodes) or a resent prepare: position 1 reaches this entity after
    // position 2. Were it to wait, and position 2 wait for it on another entity, neither would
    // ever end.
    LockTable<String> table = new LockTable<>();
    table.request(12, 2, keys(Mode.WRITE, "a"), "planned-2", false);
    assertEquals(new LockTable.Outcome.Died(12),
        table.request(11, 1, keys(Mode.WRITE, "a"), "planned-1", false));
    assertInstanceOf(LockTable.Outcome.Granted.class,
        table.request(11, 1, keys(Mode.READ, "b"), "planned-1", false), "no conflict, no death");
    // A dynamic holder younger than a planned request is waited for, as before (it never waits
    // for the planned one); a later planned waiter is not.
    LockTable<String> mixed = new LockTable<>();
    mixed.request(50, 50, keys(Mode.WRITE, "a"), "dynamic");
    assertInstanceOf(LockTable.Outcome.Waiting.class,
        mixed.request(13, 3, keys(Mode.WRITE, "a"), "planned-3", false));
    assertEquals(new LockTable.Outcome.Died(13),
        mixed.request(14, 1, keys(Mode.WRITE, "a"), "planned-1", false));
  }

  @Test
  void aRetryKeepsItsAge() {
    LockTable<String> table = new LockTable<>();
    table.request(10, 10, keys(Mode.WRITE, "a"), "t10");
    // Attempt 2 of a transaction that started at 5 has id 30 but age 5: it waits instead of dying.
    assertInstanceOf(LockTable.Outcome.Waiting.class,
        table.request(30, 5, keys(Mode.WRITE, "a"), "retry"));
  }

  @Test
  void cancellingAWaiterLetsLaterOnesIn() {
    LockTable<String> table = new LockTable<>();
    table.request(10, 10, keys(Mode.WRITE, "a"), "t10");
    table.request(4, 4, keys(Mode.WRITE, "a", "b"), "t4");
    table.request(2, 2, keys(Mode.WRITE, "b"), "t2"); // older than both: waits behind t4 on b
    assertEquals(2, table.waiterCount());
    assertEquals(List.of(new LockTable.Grant<>(2L, "t2")), table.cancel(4));
  }

  /**
   * Random requests, releases and cancellations over several tables (entities) by transactions
   * that each hold or wait at several of them: conflicting holders never coexist, every wait edge
   * points from an older to a younger transaction (so the global waits-for graph stays acyclic),
   * and once all holders release, every remaining waiter is granted.
   */
  @Property(tries = 300)
  void waitDieKeepsLocksSafeAndDeadlockFree(@ForAll long seed) {
    Random random = new Random(seed);
    int tables = 3;
    List<LockTable<Long>> locks = new ArrayList<>();
    for (int i = 0; i < tables; i++) {
      locks.add(new LockTable<>());
    }
    Map<Long, Map<Integer, LockSet>> waitingAt = new HashMap<>();
    Map<Long, Map<Integer, LockSet>> held = new HashMap<>();
    Set<Long> dead = new HashSet<>();
    String[] keyNames = {"a", "b", "c"};
    for (int step = 0; step < 200; step++) {
      long transaction = 1 + random.nextInt(12);
      int table = random.nextInt(tables);
      LockTable<Long> lockTable = locks.get(table);
      if (random.nextInt(3) == 0) {
        // The transaction ends: release everywhere (or withdraw its waits).
        for (int t = 0; t < tables; t++) {
          apply(locks.get(t).release(transaction), t, waitingAt, held, locks);
          apply(locks.get(t).cancel(transaction), t, waitingAt, held, locks);
        }
        held.remove(transaction);
        waitingAt.remove(transaction);
        dead.remove(transaction);
        continue;
      }
      if (lockTable.isWaiting(transaction) || dead.contains(transaction)) {
        continue;
      }
      LockSet wanted = random.nextInt(5) == 0
          ? LockSet.wholeEntity(random.nextBoolean() ? Mode.READ : Mode.WRITE)
          : keys(random.nextBoolean() ? Mode.READ : Mode.WRITE,
              keyNames[random.nextInt(3)], keyNames[random.nextInt(3)]);
      List<Long> conflicting = new ArrayList<>();
      for (long holder : lockTable.holders()) {
        if (holder != transaction && held.get(holder).get(table).conflictsWith(wanted)) {
          conflicting.add(holder);
        }
      }
      switch (lockTable.request(transaction, transaction, wanted, transaction)) {
        case LockTable.Outcome.Granted ignored -> {
          assertTrue(conflicting.isEmpty(), "granted despite conflicting holders " + conflicting);
          held.computeIfAbsent(transaction, k -> new HashMap<>())
              .merge(table, wanted, LockSet::merge);
        }
        case LockTable.Outcome.Waiting ignored -> {
          for (long holder : conflicting) {
            assertTrue(transaction < holder, transaction + " waits for older " + holder);
          }
          LockSet current = held.getOrDefault(transaction, Map.of()).get(table);
          waitingAt.computeIfAbsent(transaction, k -> new HashMap<>())
              .put(table, current == null ? wanted : current.merge(wanted));
        }
        case LockTable.Outcome.Died died -> {
          assertTrue(died.conflictingTransaction() <= transaction || conflicting.isEmpty(),
              "died for a younger transaction");
          dead.add(transaction);
        }
      }
      checkNoConflictingHolders(locks, held);
    }
    // Everyone releases: every waiter is granted in the end.
    for (long transaction = 1; transaction <= 12; transaction++) {
      for (int t = 0; t < tables; t++) {
        if (!locks.get(t).isWaiting(transaction)) {
          apply(locks.get(t).release(transaction), t, waitingAt, held, locks);
        }
      }
    }
    for (int round = 0; round < 20; round++) {
      for (int t = 0; t < tables; t++) {
        for (long holder : locks.get(t).holders()) {
          apply(locks.get(t).release(holder), t, waitingAt, held, locks);
        }
      }
    }
    for (LockTable<Long> table : locks) {
      assertTrue(table.isEmpty(), "waiters left behind: " + table.waiterCount());
    }
  }

  private static void apply(List<LockTable.Grant<Long>> grants, int table,
      Map<Long, Map<Integer, LockSet>> waitingAt, Map<Long, Map<Integer, LockSet>> held,
      List<LockTable<Long>> locks) {
    for (LockTable.Grant<Long> grant : grants) {
      Map<Integer, LockSet> waits = waitingAt.get(grant.transactionId());
      LockSet wanted = waits == null ? null : waits.remove(table);
      assertTrue(wanted != null, "granted a transaction that did not wait");
      held.computeIfAbsent(grant.transactionId(), k -> new HashMap<>()).put(table, wanted);
    }
    checkNoConflictingHolders(locks, held);
  }

  private static void checkNoConflictingHolders(List<LockTable<Long>> locks,
      Map<Long, Map<Integer, LockSet>> held) {
    for (int t = 0; t < locks.size(); t++) {
      List<Long> holders = locks.get(t).holders();
      for (int i = 0; i < holders.size(); i++) {
        for (int j = i + 1; j < holders.size(); j++) {
          LockSet first = held.get(holders.get(i)) == null ? null : held.get(holders.get(i)).get(t);
          LockSet second = held.get(holders.get(j)) == null ? null : held.get(holders.get(j)).get(t);
          if (first != null && second != null) {
            assertFalse(first.conflictsWith(second),
                "conflicting holders " + holders.get(i) + " and " + holders.get(j));
          }
        }
      }
    }
  }
}
