package dev.troupe.replication;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.replication.ReceiverCore.Effect;
import dev.troupe.replication.ReceiverCore.Input;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import dev.troupe.replication.ReplicationMutations.Mutation;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * ReceiverCore's truncation while peers are added and removed at runtime ({@link
 * Input.PeersChanged}), against random histories: peers reporting random received vectors,
 * heartbeats advancing origins, peers joining, leaving and re-joining. Every truncation bound of
 * an origin d must be at or below what every current holder of d (every current peer but d, and
 * this DC for a remote d) holds of it, a peer that has not reported since it (re)joined counting
 * 0: a newcomer stalls truncation instead of losing entries it will ask for, and a removed peer
 * no longer holds it back.
 */
class ReceiverCorePeerChangeProperties {
  static final int A = 1;
  static final List<Integer> POOL = List.of(2, 3, 4, 5);

  @Property(tries = 300)
  void truncationNeverPassesWhatACurrentHolderHasNotReported(@ForAll long seed) {
    run(seed, Set.of());
  }

  /** The check is not vacuous: truncating past the stable vector is caught. */
  @Example
  void theCheckCatchesTruncationBeforeStable() {
    int caught = 0;
    for (long seed = 0; seed < 50; seed++) {
      try {
        run(seed, Set.of(Mutation.TRUNCATE_BEFORE_STABLE));
      } catch (AssertionError expected) {
        caught++;
      }
    }
    assertTrue(caught > 0, "no seed caught the mutation");
  }

  private static void run(long seed, Set<Mutation> mutations) {
    Random random = new Random(seed);
    ReceiverCore core = new ReceiverCore(A, List.of(2, 3),
        new ReceiverLimits(4, 1000, 50, 0, 0), mutations);
    TreeSet<Integer> peers = new TreeSet<>(List.of(2, 3));
    Map<Integer, DependencyVector> reported = new HashMap<>();
    Map<Integer, Long> received = new HashMap<>();
    long now = 0;
    check(core.handle(new Input.RecoveredEntries(DependencyVector.EMPTY, DependencyVector.EMPTY,
        List.of()), now), peers, reported, received, seed);
    long ownSafe = 0;
    for (int step = 0; step < 200; step++) {
      now += random.nextInt(20);
      List<Effect> effects;
      int choice = random.nextInt(10);
      if (choice < 4 && !peers.isEmpty()) {
        int peer = pick(peers, random);
        TreeMap<Integer, Long> vector = new TreeMap<>();
        for (int dc : POOL) {
          if (dc != peer) {
            vector.put(dc, (long) random.nextInt(100));
          }
        }
        ownSafe += random.nextInt(5);
        vector.put(A, (long) random.nextInt((int) ownSafe + 1));
        DependencyVector report = new DependencyVector(vector);
        reported.merge(peer, report, DependencyVector::merge);
        effects = core.handle(new Input.PeerReported(peer, report), now);
      } else if (choice < 8 && !peers.isEmpty()) {
        int origin = pick(peers, random);
        long upTo = received.getOrDefault(origin, 0L) + random.nextInt(10);
        effects = new java.util.ArrayList<>();
        for (Effect effect : core.handle(new Input.BatchReceived(origin,
            new ReplicationBatch(origin, List.of(), upTo)), now)) {
          if (effect instanceof Effect.PersistBatch persist) {
            received.merge(origin, persist.batch().upToTimestamp(), Math::max);
            effects.addAll(core.handle(new Input.BatchPersisted(origin, persist.batch()), now));
          } else {
            effects.add(effect);
          }
        }
      } else if (choice < 9) {
        TreeSet<Integer> next = new TreeSet<>();
        for (int dc : POOL) {
          if (random.nextInt(3) > 0) {
            next.add(dc);
          }
        }
        for (int removed : peers) {
          if (!next.contains(removed)) {
            reported.remove(removed);
            received.remove(removed);
          }
        }
        for (int added : next) {
          if (!peers.contains(added)) {
            reported.remove(added);
            received.remove(added);
          }
        }
        peers = next;
        effects = core.handle(new Input.PeersChanged(Set.copyOf(next)), now);
        assertTrue(core.peers().equals(next), "failing seed " + seed);
      } else {
        effects = core.handle(new Input.Tick(), now);
      }
      check(effects, peers, reported, received, seed);
    }
  }

  private static int pick(TreeSet<Integer> set, Random random) {
    return List.copyOf(set).get(random.nextInt(set.size()));
  }

  /** Checks every Truncate of {@code effects}; answers how many there were. */
  private static int check(List<Effect> effects, TreeSet<Integer> peers,
      Map<Integer, DependencyVector> reported, Map<Integer, Long> received, long seed) {
    int truncations = 0;
    for (Effect effect : effects) {
      if (!(effect instanceof Effect.Truncate truncate)) {
        continue;
      }
      truncations++;
      TreeSet<Integer> all = new TreeSet<>(peers);
      all.add(A);
      for (int d : all) {
        long held = Long.MAX_VALUE;
        for (int holder : all) {
          if (holder == d) {
            continue;
          }
          long holds = holder == A ? received.getOrDefault(d, 0L)
              : reported.getOrDefault(holder, DependencyVector.EMPTY).get(d);
          held = Math.min(held, holds);
        }
        if (all.size() == 1) {
          held = Long.MAX_VALUE; // no peer: nobody to keep anything for
        }
        assertTrue(truncate.below().get(d) <= held, "failing seed " + seed + ": " + truncate
            + " truncates DC " + d + " past " + held + " (peers " + peers + ", reported "
            + reported + ", received " + received + ")");
      }
    }
    return truncations;
  }
}
