package dev.troupe.sim.geo;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.model.value.CounterValue;
import dev.troupe.replication.ReceiverCore;
import dev.troupe.replication.RemoteApplication;
import dev.troupe.replication.RemoteTransaction;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.sim.Scheduler;
import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnEvaluator;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * One simulated data centre (DC): a single node's committed entity states, its replication log and
 * its clock, modelling the store's contract (docs/ARCHITECTURE.md, "Several data centres"), with
 * the production materializer ({@link EntityState#apply}), the production evaluation of a remote
 * part ({@link TurnEvaluator#evaluate} of a {@link Turn.ApplyReplicated}) and the production causal
 * receiver ({@link ReceiverCore}, whose effects {@link SimulatedDataCentres} performs).
 *
 * <p><b>Durable</b> (survives a crash): entity states; the replication log (local commits append
 * their parts, and the decision of a multi-entity transaction, in the same atomic step as the
 * commit, each with the applying vector as its dependencies; remote entries once their append
 * completed); the received vector (raised with the entries); the applied vector as last recorded;
 * the highest timestamp issued or observed (the store's clock ceiling). <b>Volatile</b> (lost):
 * the receiver, received batches whose append had not completed, applications not yet done.
 *
 * <p>A local transaction commits in one scheduler step (its log entries with it), so nothing
 * local is ever in flight and the local safe timestamp is the clock's current value. A restart
 * builds a new clock past the ceiling and a new receiver, fed the durable vectors and the log's
 * remote entries above the recorded applied vector; an entity's replica marker skips what was
 * applied already, and local commits depend on the applying vector the receiver publishes at
 * recovery (whether that is enough is what the causal checker judges).
 */
final class SimulatedDataCentre {
  /** A log key: (timestamp, transaction id, index), the order the store reads entries in. */
  private static final Comparator<ReplicationEntry> LOG_ORDER =
      Comparator.comparingLong(ReplicationEntry::timestamp)
          .thenComparingLong(ReplicationEntry::transactionId)
          .thenComparingInt(ReplicationEntry::index);

  final String name;
  final int id;
  final long clockOffsetMillis;
  private final Scheduler scheduler;
  private final Function<SimulatedDataCentre, ReceiverCore> receivers;

  // Durable.
  private final TreeMap<String, EntityState> entities = new TreeMap<>();
  private final Map<Integer, TreeMap<ReplicationEntry, ReplicationEntry>> log = new TreeMap<>();
  private DependencyVector durableReceived = DependencyVector.EMPTY;
  private DependencyVector recordedApplied = DependencyVector.EMPTY;
  private long clockCeiling;
  private long highestLocal;

  // Volatile.
  private HybridLogicalClock clock;
  private ReceiverCore receiver;
  /** The applying vector the receiver published last (the store's applying-vector source). */
  private DependencyVector applying = DependencyVector.EMPTY;
  private boolean up;
  private int incarnation;

  long crashes;
  long truncatedEntries;
  long remoteApplications;
  /** Remote transactions in those applications (more than applications: runs were batched). */
  long remoteTransactionsInApplications;
  long skippedReapplications;

  SimulatedDataCentre(String name, int id, long clockOffsetMillis, Scheduler scheduler,
      Function<SimulatedDataCentre, ReceiverCore> receivers) {
    this.name = name;
    this.id = id;
    this.clockOffsetMillis = clockOffsetMillis;
    this.scheduler = scheduler;
    this.receivers = receivers;
    start();
  }

  boolean up() {
    return up;
  }

  int incarnation() {
    return incarnation;
  }

  ReceiverCore receiver() {
    return receiver;
  }

  DependencyVector durableReceived() {
    return durableReceived;
  }

  DependencyVector recordedApplied() {
    return recordedApplied;
  }

  long physicalMillis() {
    return scheduler.nowMillis() + clockOffsetMillis;
  }

  /** Starts (first time or after a crash) from the durable state. */
  private void start() {
    clock = new HybridLogicalClock(this::physicalMillis);
    clock.advancePast(clockCeiling);
    up = true;
    incarnation++;
    receiver = receivers.apply(this);
    applying = DependencyVector.EMPTY;
  }

  /** Loses the volatile state: the receiver, appends and applications in flight. */
  void crash() {
    Invariants.check(up, "crash of %s, which is down", name);
    up = false;
    incarnation++;
    receiver = null;
    clock = null;
    crashes++;
  }

  void restart() {
    Invariants.check(!up, "restart of %s, which is up", name);
    start();
  }

  /** The log's remote entries above the recorded applied vector, in log order per origin. */
  List<ReplicationEntry> entriesToRefeed() {
    List<ReplicationEntry> entries = new ArrayList<>();
    for (Map.Entry<Integer, TreeMap<ReplicationEntry, ReplicationEntry>> origin : log.entrySet()) {
      if (origin.getKey() == id) {
        continue;
      }
      long after = recordedApplied.get(origin.getKey());
      for (ReplicationEntry entry : origin.getValue().values()) {
        if (entry.timestamp() > after) {
          entries.add(entry);
        }
      }
    }
    return entries;
  }

  private long tick() {
    long timestamp = clock.tick();
    clockCeiling = Math.max(clockCeiling, timestamp);
    return timestamp;
  }

  /** The receiver published a new applying vector: local commits depend on it from now on. */
  void publishApplying(DependencyVector vector) {
    applying = vector;
  }

  /** The vector a local commit depends on: what may have become visible here. */
  DependencyVector applyingVector() {
    TreeMap<Integer, Long> entries = new TreeMap<>(applying.entries());
    entries.remove(id);
    return DependencyVector.of(entries);
  }

  /**
   * The causal token of an answer: the applied vector with the own entry at the clock's current
   * value (every local commit at or below it is visible here).
   */
  DependencyVector causalToken() {
    return receiver.appliedVector().atLeast(id, clock.current());
  }

  /** Whether this DC's state includes everything {@code token} names. */
  boolean covers(DependencyVector token) {
    return receiver.appliedVector().coversExcept(token, id);
  }

  /** A fresh transaction id (ticked, as the coordinator does before it commits). */
  long newTransactionId() {
    return tick();
  }

  EntityState state(String entity) {
    return entities.getOrDefault(entity, EntityState.ABSENT);
  }

  /**
   * Commits a local transaction in one step: each entity's operations at its own commit
   * timestamp, one log part per entity, and before them a decision when there are several.
   */
  void commitLocal(long transactionId, SortedMap<String, List<Operation>> parts) {
    DependencyVector dependencies = applyingVector();
    TreeMap<ReplicationEntry, ReplicationEntry> own = logOf(id);
    int index = 0;
    if (parts.size() > 1) {
      List<EntityId> participants = new ArrayList<>();
      parts.keySet().forEach(entity -> participants.add(EntityId.parse(entity)));
      ReplicationEntry decision = new ReplicationEntry.Decision(id, tick(), transactionId,
          index++, participants, dependencies);
      own.put(decision, decision);
    }
    for (Map.Entry<String, List<Operation>> part : parts.entrySet()) {
      long commitTimestamp = tick();
      entities.put(part.getKey(),
          state(part.getKey()).apply(part.getValue(), commitTimestamp, id));
      ReplicationEntry entry = new ReplicationEntry.Part(id, commitTimestamp, transactionId,
          index++, EntityId.parse(part.getKey()), part.getValue(), dependencies);
      own.put(entry, entry);
      highestLocal = Math.max(highestLocal, commitTimestamp);
    }
  }

  /** The local safe timestamp: no local commit in flight, so the clock's current value. */
  long localSafeTimestamp() {
    return clock.current();
  }

  private TreeMap<ReplicationEntry, ReplicationEntry> logOf(int originDc) {
    return log.computeIfAbsent(originDc, ignored -> new TreeMap<>(LOG_ORDER));
  }

  /**
   * A pull's answer, as the store reads it: {@code originDc}'s entries after {@code after}, at
   * most about {@code maxEntries} (never splitting one timestamp), up to the local safe timestamp
   * for the own origin or the durable received entry for another.
   */
  ReplicationBatch read(int originDc, long after, int maxEntries) {
    long bound = originDc == id ? localSafeTimestamp() : durableReceived.get(originDc);
    List<ReplicationEntry> entries = new ArrayList<>();
    TreeMap<ReplicationEntry, ReplicationEntry> origin = log.get(originDc);
    long upTo = Math.max(bound, after);
    if (origin != null) {
      ReplicationEntry from = new ReplicationEntry.Decision(originDc, after, Long.MAX_VALUE,
          Integer.MAX_VALUE, List.of(), DependencyVector.EMPTY);
      for (ReplicationEntry entry : origin.tailMap(from, false).keySet()) {
        if (entry.timestamp() > bound) {
          break;
        }
        if (entries.size() >= maxEntries
            && entries.get(entries.size() - 1).timestamp() != entry.timestamp()) {
          upTo = entries.get(entries.size() - 1).timestamp();
          break;
        }
        entries.add(entry);
      }
    }
    return new ReplicationBatch(originDc, entries, upTo);
  }

  /**
   * Appends a received batch's entries durably and raises the received vector to its bound (the
   * receiver asks only for what continues its received prefix, and drops what it holds already).
   */
  void appendReceived(ReplicationBatch batch) {
    int origin = batch.originDc();
    TreeMap<ReplicationEntry, ReplicationEntry> entries = logOf(origin);
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() > durableReceived.get(origin)) {
        entries.put(entry, entry);
      }
      clockCeiling = Math.max(clockCeiling, entry.timestamp());
    }
    durableReceived = durableReceived.atLeast(origin, batch.upToTimestamp());
    clockCeiling = Math.max(clockCeiling, batch.upToTimestamp());
  }

  /** Advances the clock past a received timestamp (before applying, as the shell does). */
  void observe(long timestamp) {
    clock.advancePast(timestamp);
    clockCeiling = Math.max(clockCeiling, timestamp);
  }

  /**
   * Applies a run of remote transactions atomically (in one simulator step): per entity one
   * {@code ApplyReplicated} turn with a segment of every transaction touching it, through the
   * production evaluation (segments at or below the marker skipped, the marker then at the last
   * applied; assignments stamped as at the origin), committed with the materializer.
   */
  void applyRemote(RemoteApplication application) {
    for (RemoteTransaction transaction : application.transactions()) {
      observe(transaction.transactionTimestamp());
      for (RemoteTransaction.Part part : transaction.parts()) {
        observe(part.stampTimestamp());
      }
    }
    application.segmentsByEntity().forEach((entityId, segments) -> {
      List<Turn.ApplyReplicated.Segment> converted = new ArrayList<>();
      for (RemoteApplication.Segment segment : segments) {
        converted.add(new Turn.ApplyReplicated.Segment(segment.transactionTimestamp(),
            segment.part().stampTimestamp(), segment.part().operations()));
      }
      String entity = name(entityId);
      EntityState state = state(entity);
      TurnEvaluator.Decision decision = TurnEvaluator.evaluate(entityId, null, state,
          new Turn.ApplyReplicated(application.originDc(), converted), 0, id, null);
      if (!(decision instanceof TurnEvaluator.Decision.Write write)) {
        throw new IllegalStateException("a replica application was refused: " + decision);
      }
      if (write.operations().isEmpty()) {
        skippedReapplications++;
        return;
      }
      entities.put(entity, state.apply(write.operations(), tick(), id));
    });
    remoteApplications++;
    remoteTransactionsInApplications += application.transactions().size();
  }

  /** Records the applied vector durably (the receiver throttles these). */
  void recordApplied(DependencyVector applied) {
    recordedApplied = applied;
  }

  /** Drops log entries at or below {@code below}'s entry of their origin. */
  void truncate(DependencyVector below) {
    for (Map.Entry<Integer, TreeMap<ReplicationEntry, ReplicationEntry>> origin : log.entrySet()) {
      long bound = below.get(origin.getKey());
      NavigableMap<ReplicationEntry, ReplicationEntry> entries = origin.getValue();
      while (!entries.isEmpty() && entries.firstKey().timestamp() <= bound) {
        entries.pollFirstEntry();
        truncatedEntries++;
      }
    }
  }

  long entryCount() {
    long count = 0;
    for (TreeMap<ReplicationEntry, ReplicationEntry> entries : log.values()) {
      count += entries.size();
    }
    return count;
  }

  /** The highest local entry's timestamp (what every other DC must apply to be caught up). */
  long highestLocalCommit() {
    return highestLocal;
  }

  /** Reads objects atomically (one step): the workload's view of each entity. */
  SortedMap<String, ObjectRead> read(List<String> objects) {
    TreeMap<String, ObjectRead> reads = new TreeMap<>();
    for (String object : objects) {
      reads.put(object, objectRead(state(object)));
    }
    return reads;
  }

  SortedMap<String, ObjectRead> readAll() {
    return read(new ArrayList<>(entities.keySet()));
  }

  /**
   * Every entity's user-visible state (markers left out), canonically rendered: per entity
   * whether it exists, and per key ({@code entity.key}) its JSON.
   */
  SortedMap<String, String> canonicalStates() {
    TreeMap<String, String> states = new TreeMap<>();
    for (Map.Entry<String, EntityState> entity : entities.entrySet()) {
      states.put(entity.getKey(), entity.getValue().exists() ? "exists" : "deleted");
      entity.getValue().values().forEach((key, value) -> {
        if (!ReplicaApplication.isMarkerKey(key)) {
          states.put(entity.getKey() + "." + key, value.toJson().toString());
        }
      });
    }
    return states;
  }

  static ObjectRead objectRead(EntityState state) {
    TreeSet<String> writers = new TreeSet<>();
    TreeMap<String, Long> registers = new TreeMap<>();
    TreeMap<String, Long> counters = new TreeMap<>();
    TreeMap<String, java.util.Set<String>> sets = new TreeMap<>();
    state.values().forEach((key, value) -> {
      if (ReplicaApplication.isMarkerKey(key)) {
        return;
      }
      switch (value) {
        case RegisterValue register -> registers.put(key, register.value().asLong());
        case CounterValue counter -> counters.put(key, counter.total());
        case SetValue set -> {
          TreeSet<String> elements = new TreeSet<>();
          for (SetValue.Element element : set.elements().values()) {
            elements.add(element.value().asText());
          }
          if (key.equals(GeoWorkload.WRITE_LOG)) {
            writers.addAll(elements);
          } else {
            sets.put(key, elements);
          }
        }
        default -> { }
      }
    });
    return new ObjectRead(writers, registers, counters, sets);
  }

  static String name(EntityId entity) {
    return entity.type() + "/" + entity.id();
  }
}
