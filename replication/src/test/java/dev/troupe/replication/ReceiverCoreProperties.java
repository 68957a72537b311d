package dev.troupe.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.ReceiverCore.Effect;
import dev.troupe.replication.ReceiverCore.Input;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
 * ReceiverCore against random histories of three origins (B, C, D) received by A: random
 * dependencies between them, multi-entity transactions whose parts interleave with other
 * transactions, batches cut anywhere (never inside a timestamp), pulled from the origin or
 * forwarded, duplicated, persisted and applied in any order, applications that fail, and crashes
 * that lose what was not durable and re-feed the log (so recovery groups the re-fed transactions
 * into runs other than before). Batched application is on with random bounds: every application
 * must be a run of consecutive transactions of one origin within the bounds, each whole and
 * respecting its dependencies, with no other application of its origin in flight; what is
 * visible of each origin (applied atomically, one application at a time) must stay a prefix of
 * its log closed under dependencies; the applied vector must never exceed what is applied; and
 * once everything is delivered, every transaction must be applied exactly once (counted through
 * the {@code $replicated} markers, per segment, that make re-application after a crash a no-op).
 */
class ReceiverCoreProperties {
  static final int A = 1;
  static final List<Integer> ORIGINS = List.of(2, 3, 4);
  static final List<EntityId> ENTITIES = List.of(new EntityId("Item", "a"),
      new EntityId("Item", "b"), new EntityId("Item", "c"), new EntityId("Item", "d"),
      new EntityId("Item", "e"));

  @Property(tries = 200)
  void everyApplicationIsCausalAtomicAndExactlyOnce(@ForAll long seed) {
    try {
      new Run(seed, Set.of()).run();
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError("failing seed " + seed + ": " + e.getMessage(), e);
    }
  }

  /** The checks are not vacuous: each breakage of causality or atomicity is caught. */
  @Example
  void theChecksCatchTheMutations() {
    for (Mutation mutation : List.of(Mutation.APPLY_BEFORE_DEPENDENCIES,
        Mutation.SPLIT_MULTI_ENTITY_TRANSACTIONS, Mutation.SPLIT_BATCH_BY_ENTITY)) {
      int caught = 0;
      for (long seed = 0; seed < 50; seed++) {
        try {
          new Run(seed, Set.of(mutation)).run();
        } catch (AssertionError e) {
          caught++;
        }
      }
      assertTrue(caught > 10, mutation + " caught in only " + caught + " of 50 runs");
    }
  }

  /** The property is not vacuous about batching: many runs apply several transactions at once. */
  @Example
  void runsOfSeveralTransactionsAreExercised() {
    int batching = 0;
    for (long seed = 0; seed < 50; seed++) {
      Run run = new Run(seed, Set.of());
      run.run();
      batching += run.batched > 0 ? 1 : 0;
    }
    assertTrue(batching > 20, "runs of several transactions in only " + batching + " of 50");
  }

  /** A generated transaction of an origin, as the receiver must apply it. */
  record Generated(int origin, long timestamp, long transactionId, DependencyVector dependencies,
      List<RemoteTransaction.Part> parts, int index) {
    RemoteTransaction expected() {
      return new RemoteTransaction(origin, timestamp, transactionId, dependencies, parts);
    }
  }

  static final class Run {
    final Random random;
    final Set<Mutation> mutations;
    final ReceiverLimits limits;
    final Map<Integer, TreeMap<Long, Generated>> history = new HashMap<>();
    final Map<Integer, List<ReplicationEntry>> logs = new HashMap<>();
    final Map<Integer, Long> finalUpTo = new HashMap<>();
    // A's durable state.
    final Map<Integer, TreeMap<String, ReplicationEntry>> durable = new HashMap<>();
    final Map<Integer, Long> durableReceived = new HashMap<>();
    DependencyVector recordedApplied = DependencyVector.EMPTY;
    // The world's state: what was applied (through markers), what is in flight.
    final Map<String, Long> markers = new HashMap<>();
    final Map<String, Integer> effectiveApplications = new HashMap<>();
    final Set<String> effectivelyApplied = new HashSet<>();
    final List<RemoteApplication> inFlight = new ArrayList<>();
    /** Failed applications: still in flight for the core until it emits them again. */
    final List<RemoteApplication> retrying = new ArrayList<>();
    /** How many applications held more than one transaction (batching is exercised). */
    int batched;
    final List<Effect.PersistBatch> toPersist = new ArrayList<>();
    final List<ReceiverCore.Input.BatchReceived> sent = new ArrayList<>();
    DependencyVector published = DependencyVector.EMPTY;
    ReceiverCore core;
    long now;

    Run(long seed, Set<Mutation> mutations) {
      this.mutations = mutations;
      random = new Random(seed);
      limits = new ReceiverLimits(1 + random.nextInt(4), 100, 20, random.nextInt(3) * 10,
          random.nextInt(3) * 10, 1 + random.nextInt(8), 1 + random.nextInt(5));
      generate();
    }

    static String key(int origin, long timestamp, long transactionId) {
      return origin + "/" + timestamp + "/" + transactionId;
    }

    static String key(RemoteTransaction transaction) {
      return key(transaction.originDc(), transaction.transactionTimestamp(),
          transaction.transactionId());
    }

    void generate() {
      Map<Integer, Long> clocks = new HashMap<>();
      Map<Integer, Set<Long>> used = new HashMap<>();
      List<Generated> all = new ArrayList<>();
      int count = 10 + random.nextInt(30);
      long nextId = 1000;
      for (int origin : ORIGINS) {
        history.put(origin, new TreeMap<>());
        logs.put(origin, new ArrayList<>());
        used.put(origin, new HashSet<>());
        clocks.put(origin, 0L);
      }
      for (int i = 0; i < count; i++) {
        int origin = ORIGINS.get(random.nextInt(ORIGINS.size()));
        Set<Long> taken = used.get(origin);
        long timestamp = clocks.get(origin) + 1 + random.nextInt(3);
        while (taken.contains(timestamp)) {
          timestamp++;
        }
        taken.add(timestamp);
        clocks.put(origin, timestamp);
        // Dependencies: what the origin may have seen of the others, generated before.
        TreeMap<Integer, Long> dependencies = new TreeMap<>();
        for (Generated earlier : all) {
          if (earlier.origin() != origin && random.nextInt(4) == 0) {
            dependencies.merge(earlier.origin(), earlier.timestamp(), Math::max);
          }
        }
        if (random.nextBoolean()) {
          dependencies.put(A, 1L + random.nextInt(50)); // the receiver's own: always visible
        }
        DependencyVector vector = new DependencyVector(dependencies);
        long transactionId = nextId++;
        List<ReplicationEntry> entries = logs.get(origin);
        List<RemoteTransaction.Part> parts = new ArrayList<>();
        if (random.nextInt(3) == 0) {
          List<EntityId> participants = new ArrayList<>(ENTITIES);
          java.util.Collections.shuffle(participants, random);
          participants = List.copyOf(participants.subList(0, 2 + random.nextInt(2)));
          entries.add(new ReplicationEntry.Decision(origin, timestamp, transactionId, 0,
              participants, vector));
          long at = timestamp;
          int index = 0;
          for (EntityId participant : participants) {
            at += 1 + random.nextInt(4);
            while (taken.contains(at)) {
              at++;
            }
            taken.add(at);
            // Each part may carry a different (larger) dependency vector.
            DependencyVector partVector = random.nextBoolean() ? vector
                : vector.atLeast(A, 60);
            List<Operation> operations = List.of(new Operation.Increment("n", at));
            entries.add(new ReplicationEntry.Part(origin, at, transactionId, index++,
                participant, operations, partVector));
            parts.add(new RemoteTransaction.Part(participant, at, operations));
            vector = vector.merge(partVector);
          }
        } else {
          EntityId entity = ENTITIES.get(random.nextInt(ENTITIES.size()));
          List<Operation> operations = List.of(new Operation.Increment("n", timestamp));
          entries.add(new ReplicationEntry.Part(origin, timestamp, transactionId, 0, entity,
              operations, vector));
          parts.add(new RemoteTransaction.Part(entity, timestamp, operations));
        }
        Generated generated = new Generated(origin, timestamp, transactionId, vector, parts, i);
        history.get(origin).put(timestamp, generated);
        all.add(generated);
      }
      for (int origin : ORIGINS) {
        logs.get(origin).sort(java.util.Comparator.comparingLong(ReplicationEntry::timestamp)
            .thenComparingLong(ReplicationEntry::transactionId)
            .thenComparingInt(ReplicationEntry::index));
        long last = logs.get(origin).isEmpty() ? 0 : logs.get(origin).getLast().timestamp();
        finalUpTo.put(origin, last + random.nextInt(5));
        durable.put(origin, new TreeMap<>());
        durableReceived.put(origin, 0L);
      }
    }

    void run() {
      start(new Input.RecoveredEntries(DependencyVector.EMPTY, DependencyVector.EMPTY,
          List.of()));
      int crashes = 0;
      for (int step = 0; step < 400; step++) {
        now += random.nextInt(15);
        int action = random.nextInt(100);
        if (action < 30) {
          pullRandomly();
        } else if (action < 35 && !sent.isEmpty()) {
          feed(sent.get(random.nextInt(sent.size()))); // a duplicate or late copy
        } else if (action < 60 && !toPersist.isEmpty()) {
          Effect.PersistBatch persist = toPersist.remove(random.nextInt(toPersist.size()));
          persist(persist);
        } else if (action < 88 && !inFlight.isEmpty()) {
          RemoteApplication application = inFlight.remove(random.nextInt(inFlight.size()));
          if (random.nextInt(10) == 0) {
            retrying.add(application);
            feed(new Input.ApplicationFailed(application, "timeout"));
          } else {
            complete(application);
          }
        } else if (action < 89 && crashes < 2) {
          crashes++;
          crash();
        } else {
          feed(new Input.Tick());
        }
      }
      drain();
      for (int origin : ORIGINS) {
        for (Generated generated : history.get(origin).values()) {
          String key = key(origin, generated.timestamp(), generated.transactionId());
          assertEquals(1, effectiveApplications.getOrDefault(key, 0),
              "applications of " + generated);
        }
        assertEquals(finalUpTo.get(origin), core.appliedVector().get(origin),
            "applied entry of " + origin);
        assertEquals(0, core.pendingTransactions(origin));
      }
    }

    void drain() {
      for (int round = 0; round < 10_000; round++) {
        boolean idle = true;
        for (int origin : ORIGINS) {
          if (core.receivedVector().get(origin) < finalUpTo.get(origin)) {
            pull(origin, origin, core.receivedVector().get(origin), Integer.MAX_VALUE);
            idle = false;
          }
        }
        while (!toPersist.isEmpty()) {
          persist(toPersist.removeFirst());
          idle = false;
        }
        while (!inFlight.isEmpty()) {
          complete(inFlight.removeFirst());
          idle = false;
        }
        idle &= retrying.isEmpty();
        now += 25;
        feed(new Input.Tick());
        if (idle && inFlight.isEmpty() && core.pendingTransactions() == 0) {
          return;
        }
      }
      fail("not drained: pending " + core.pendingTransactions());
    }

    void pullRandomly() {
      int origin = ORIGINS.get(random.nextInt(ORIGINS.size()));
      int peer = random.nextInt(3) == 0 ? ORIGINS.get(random.nextInt(ORIGINS.size())) : origin;
      long received = core.receivedVector().get(origin);
      long after = random.nextInt(4) == 0 ? Math.max(0, received - random.nextInt(10)) : received;
      pull(peer, origin, after, random.nextInt(5));
    }

    /** What a peer answers: entries after {@code after}, never splitting a timestamp. */
    void pull(int peer, int origin, long after, int maxEntries) {
      List<ReplicationEntry> answer = new ArrayList<>();
      List<ReplicationEntry> log = logs.get(origin);
      long upTo;
      int i = 0;
      while (i < log.size() && log.get(i).timestamp() <= after) {
        i++;
      }
      while (i < log.size() && (answer.size() < maxEntries || (!answer.isEmpty()
          && log.get(i).timestamp() == answer.getLast().timestamp()))) {
        answer.add(log.get(i++));
      }
      if (i == log.size()) {
        long last = answer.isEmpty() ? after : answer.getLast().timestamp();
        upTo = Math.max(last, Math.min(finalUpTo.get(origin), last + random.nextInt(4)));
      } else {
        long next = log.get(i).timestamp();
        upTo = answer.isEmpty() ? after + random.nextInt((int) (next - after))
            : answer.getLast().timestamp() + random.nextInt((int) (next - answer.getLast()
                .timestamp()));
      }
      Input.BatchReceived input = new Input.BatchReceived(peer,
          new ReplicationBatch(origin, answer, upTo));
      sent.add(input);
      feed(input);
    }

    void persist(Effect.PersistBatch persist) {
      ReplicationBatch batch = persist.batch();
      for (ReplicationEntry entry : batch.entries()) {
        durable.get(batch.originDc()).put(entryKey(entry), entry);
      }
      durableReceived.merge(batch.originDc(), batch.upToTimestamp(), Math::max);
      feed(new Input.BatchPersisted(persist.peerDc(), batch));
    }

    static String entryKey(ReplicationEntry entry) {
      return String.format("%020d/%020d/%010d", entry.timestamp(), entry.transactionId(),
          entry.index());
    }

    /**
     * Applies it atomically the way ApplyReplicated does, entity by entity, segment by segment: a
     * segment at or below the entity's marker is skipped, the marker ends at the last applied.
     */
    void applyToWorld(RemoteApplication application) {
      Map<String, Integer> appliedParts = new HashMap<>();
      Map<String, Integer> skippedParts = new HashMap<>();
      application.segmentsByEntity().forEach((entity, segments) -> {
        String marker = entity + "@" + application.originDc();
        long before = markers.getOrDefault(marker, 0L);
        for (RemoteApplication.Segment segment : segments) {
          String key = null;
          for (RemoteTransaction transaction : application.transactions()) {
            if (transaction.transactionTimestamp() == segment.transactionTimestamp()) {
              key = key(transaction);
            }
          }
          if (segment.transactionTimestamp() <= before) {
            skippedParts.merge(key, 1, Integer::sum);
          } else {
            appliedParts.merge(key, 1, Integer::sum);
            markers.put(marker, segment.transactionTimestamp());
          }
        }
      });
      for (RemoteTransaction transaction : application.transactions()) {
        String key = key(transaction);
        assertTrue(!appliedParts.containsKey(key) || !skippedParts.containsKey(key),
            "partly applied before: " + transaction);
        if (appliedParts.containsKey(key)) {
          effectiveApplications.merge(key, 1, Integer::sum);
          effectivelyApplied.add(key);
        }
      }
      checkVisiblePrefix();
    }

    /**
     * What is visible here of each origin is a prefix of its log (causal visibility within an
     * origin) closed under dependencies on the other origins.
     */
    void checkVisiblePrefix() {
      for (int origin : ORIGINS) {
        boolean gap = false;
        for (Generated generated : history.get(origin).values()) {
          boolean visible = effectivelyApplied.contains(
              key(origin, generated.timestamp(), generated.transactionId()));
          assertTrue(!visible || !gap, "visible " + generated + " after an invisible earlier"
              + " transaction of its origin");
          gap |= !visible;
          if (!visible) {
            continue;
          }
          for (Map.Entry<Integer, Long> dependency : generated.dependencies().entries()
              .entrySet()) {
            int dc = dependency.getKey();
            if (dc == origin || dc == A) {
              continue;
            }
            for (Generated needed : history.get(dc).headMap(dependency.getValue(), true)
                .values()) {
              assertTrue(effectivelyApplied.contains(key(dc, needed.timestamp(),
                  needed.transactionId())), "visible " + generated + " without " + needed);
            }
          }
        }
      }
    }

    void complete(RemoteApplication application) {
      applyToWorld(application);
      feed(new Input.Applied(application));
    }

    void crash() {
      // What was in flight took effect or not; what was not persisted is lost.
      for (RemoteApplication application : inFlight) {
        if (random.nextBoolean()) {
          applyToWorld(application);
        }
      }
      inFlight.clear();
      retrying.clear();
      toPersist.clear();
      sent.clear();
      published = DependencyVector.EMPTY;
      List<ReplicationEntry> refed = new ArrayList<>();
      TreeMap<Integer, Long> received = new TreeMap<>();
      for (int origin : ORIGINS) {
        received.put(origin, durableReceived.get(origin));
        for (ReplicationEntry entry : durable.get(origin).values()) {
          if (entry.timestamp() > recordedApplied.get(origin)) {
            refed.add(entry);
          }
        }
      }
      start(new Input.RecoveredEntries(new DependencyVector(received), recordedApplied, refed));
    }

    void start(Input.RecoveredEntries recovered) {
      core = new ReceiverCore(A, ORIGINS, limits, mutations);
      feed(recovered);
    }

    void feed(Input input) {
      List<Effect> effects = core.handle(input, now);
      for (Effect effect : effects) {
        switch (effect) {
          case Effect.PersistBatch persist -> toPersist.add(persist);
          case Effect.PublishApplyingVector vector -> {
            assertTrue(vector.applying().covers(published), "the applying vector fell");
            published = vector.applying();
          }
          case Effect.Apply apply -> check(apply.application());
          case Effect.RecordAppliedVector record -> recordedApplied = record.applied();
          case Effect.Truncate truncate -> {
            for (int origin : ORIGINS) {
              long below = truncate.below().get(origin);
              assertTrue(below <= recordedApplied.get(origin), "truncated above the record");
              durable.get(origin).values().removeIf(entry -> entry.timestamp() <= below);
            }
          }
          case Effect.BatchRefused refused -> fail("refused " + refused);
        }
      }
      for (int origin : ORIGINS) {
        long applied = core.appliedVector().get(origin);
        assertTrue(applied <= core.receivedVector().get(origin));
        for (Generated generated : history.get(origin).headMap(applied, true).values()) {
          assertTrue(effectivelyApplied.contains(key(origin, generated.timestamp(),
              generated.transactionId())), "applied entry " + applied + " of " + origin
              + " covers unapplied " + generated);
        }
      }
    }

    void check(RemoteApplication application) {
      int origin = application.originDc();
      List<RemoteTransaction> transactions = application.transactions();
      assertTrue(transactions.size() <= limits.maxTransactionsPerApplication(),
          "too many transactions in " + application);
      assertTrue(transactions.size() == 1 || application.segmentsByEntity().size()
          <= limits.maxEntitiesPerApplication(), "too many entities in " + application);
      if (transactions.size() > 1) {
        batched++;
      }
      // A run: consecutive transactions of the origin, nothing of it between them left out.
      List<String> run = new ArrayList<>();
      for (Generated between : history.get(origin).subMap(
          application.firstTransactionTimestamp(), true,
          application.lastTransactionTimestamp(), true).values()) {
        run.add(key(origin, between.timestamp(), between.transactionId()));
      }
      assertEquals(run, transactions.stream().map(Run::key).toList(),
          "not a run of consecutive transactions: " + application);
      for (RemoteTransaction transaction : transactions) {
        check(transaction);
      }
      assertTrue(published.get(origin) >= application.lastTransactionTimestamp(),
          "applying vector " + published + " does not cover " + application);
      boolean retry = retrying.remove(application);
      List<RemoteApplication> others = new ArrayList<>(inFlight);
      others.addAll(retrying);
      Set<String> inFlightKeys = new TreeSet<>();
      for (RemoteApplication other : others) {
        for (RemoteTransaction transaction : other.transactions()) {
          inFlightKeys.add(key(transaction));
        }
      }
      for (Generated earlier : history.get(origin).headMap(
          application.firstTransactionTimestamp()).values()) {
        String key = key(origin, earlier.timestamp(), earlier.transactionId());
        assertTrue(effectivelyApplied.contains(key) || inFlightKeys.contains(key),
            application + " before the earlier " + earlier);
      }
      for (RemoteApplication other : others) {
        for (RemoteTransaction transaction : transactions) {
          assertTrue(!inFlightKeys.contains(key(transaction)), "emitted twice: " + transaction);
        }
        assertTrue(other.originDc() != origin, "two applications of one origin in flight: "
            + other + " and " + application);
        for (var entity : other.segmentsByEntity().keySet()) {
          assertTrue(!application.segmentsByEntity().containsKey(entity), "two in flight on "
              + entity);
        }
      }
      assertTrue(retry || others.size() < limits.maxApplyingTransactions(), "too many in flight");
      inFlight.add(application);
    }

    void check(RemoteTransaction transaction) {
      int origin = transaction.originDc();
      Generated generated = history.get(origin).get(transaction.transactionTimestamp());
      assertTrue(generated != null, "not a transaction of the origin: " + transaction);
      assertEquals(generated.expected(), transaction, "not whole or not as committed");
      for (Map.Entry<Integer, Long> dependency : transaction.dependencies().entries()
          .entrySet()) {
        int dc = dependency.getKey();
        if (dc == origin || dc == A) {
          continue;
        }
        for (Generated needed : history.get(dc).headMap(dependency.getValue(), true).values()) {
          assertTrue(effectivelyApplied.contains(key(dc, needed.timestamp(),
              needed.transactionId())), transaction + " before its dependency " + needed);
        }
      }
    }
  }
}
