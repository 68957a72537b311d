package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.entity.LockTable.LockSet;
import dev.troupe.txn.entity.LockTable.Mode;
import dev.troupe.txn.planned.SequencerCore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * Planned transactions of several sequencers (or with resent prepares) reach entities in any order,
 * beside dynamic ones: with the lock table's rule (an earlier planned request dies rather than wait
 * for a later one) no set of transactions ever waits for each other forever. Each transaction
 * locks on several entities at once; one that dies releases everything (its coordinator aborts
 * it); one granted everywhere commits and releases. At the end every transaction has committed or
 * died: nothing is stuck.
 */
class PlannedOrderProperties {
  private record Request(int transaction, int entity, LockSet locks) {}

  @Property(tries = 1_000)
  void plannedRequestsArrivingInAnyOrderNeverWaitForEachOtherForever(@ForAll Random random) {
    int entities = 2 + random.nextInt(3);
    int transactions = 2 + random.nextInt(7);
    List<LockTable<Integer>> tables = new ArrayList<>();
    for (int e = 0; e < entities; e++) {
      tables.add(new LockTable<>());
    }
    long[] ages = new long[transactions];
    boolean[] planned = new boolean[transactions];
    List<Set<Integer>> wanted = new ArrayList<>();
    List<Set<Integer>> granted = new ArrayList<>();
    List<Request> requests = new ArrayList<>();
    for (int t = 0; t < transactions; t++) {
      planned[t] = random.nextInt(4) > 0;
      // Planned positions below every dynamic age, in an order unrelated to arrival.
      ages[t] = planned[t] ? SequencerCore.positionOf(random.nextInt(1_000_000) * 64L + t)
          : 1_000_000_000L + random.nextInt(1_000_000) * 64L + t;
      Set<Integer> touched = new HashSet<>();
      int count = 1 + random.nextInt(entities);
      while (touched.size() < count) {
        touched.add(random.nextInt(entities));
      }
      for (int e : touched) {
        Mode mode = random.nextInt(3) == 0 ? Mode.READ : Mode.WRITE;
        LockSet locks = random.nextBoolean() ? LockSet.wholeEntity(mode)
            : new LockSet(null, Map.of("k" + random.nextInt(2), mode));
        requests.add(new Request(t, e, locks));
      }
      wanted.add(touched);
      granted.add(new HashSet<>());
    }
    Collections.shuffle(requests, random);
    boolean[] ended = new boolean[transactions];
    int next = 0;
    while (true) {
      List<Integer> ready = new ArrayList<>();
      for (int t = 0; t < transactions; t++) {
        if (!ended[t] && granted.get(t).equals(wanted.get(t))) {
          ready.add(t);
        }
      }
      boolean deliver = next < requests.size() && (ready.isEmpty() || random.nextBoolean());
      if (deliver) {
        Request request = requests.get(next++);
        if (ended[request.transaction()]) {
          continue;
        }
        int t = request.transaction();
        switch (tables.get(request.entity()).request(t, ages[t], request.locks(), t,
            !planned[t])) {
          case LockTable.Outcome.Granted ignored -> granted.get(t).add(request.entity());
          case LockTable.Outcome.Waiting ignored -> { }
          case LockTable.Outcome.Died ignored -> end(t, tables, granted, ended);
        }
      } else if (!ready.isEmpty()) {
        end(ready.get(random.nextInt(ready.size())), tables, granted, ended);
      } else {
        break;
      }
    }
    for (int t = 0; t < transactions; t++) {
      assertTrue(ended[t], "transaction " + t + " (" + (planned[t] ? "planned" : "dynamic")
          + ", age " + ages[t] + ") waits forever; granted " + granted.get(t) + " of "
          + wanted.get(t));
    }
  }

  /** Commits or aborts: withdraws and releases everywhere, granting waiters. */
  private static void end(int transaction, List<LockTable<Integer>> tables,
      List<Set<Integer>> granted, boolean[] ended) {
    ended[transaction] = true;
    for (int e = 0; e < tables.size(); e++) {
      LockTable<Integer> table = tables.get(e);
      List<LockTable.Grant<Integer>> grants = new ArrayList<>(table.cancel(transaction));
      grants.addAll(table.release(transaction));
      for (LockTable.Grant<Integer> grant : grants) {
        granted.get(grant.payload()).add(e);
      }
    }
  }
}
