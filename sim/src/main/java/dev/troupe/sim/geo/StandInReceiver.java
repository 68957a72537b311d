package dev.troupe.sim.geo;

import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A plain causal receiver the simulator ran before the production {@code ReceiverCore} existed,
 * kept as a reference model: one transaction in flight per origin, applied once its dependencies
 * (except the origin's own entry) are covered by the applied vector and all its parts arrived;
 * pulls each origin from its own DC and, once the origin stood still for the forwarding delay,
 * from every peer; stable vector = meet of every DC's reported received vector; truncation bound
 * = min(stable, applied). Used only when the simulation is asked for it ({@code
 * Receivers.STAND_IN}).
 */
final class StandInReceiver implements Receiver {
  private static final Comparator<ReplicationEntry> LOG_ORDER =
      Comparator.comparingLong(ReplicationEntry::timestamp)
          .thenComparingLong(ReplicationEntry::transactionId)
          .thenComparingInt(ReplicationEntry::index);

  private final int self;
  private final int[] all;
  private final long forwardAfterMillis;
  private final TreeMap<Integer, Long> received = new TreeMap<>();
  private final TreeMap<Integer, Long> lastAdvanceMillis = new TreeMap<>();
  private final TreeMap<Integer, Long> appliedUpTo = new TreeMap<>();
  private final TreeMap<Integer, TreeMap<ReplicationEntry, ReplicationEntry>> pending =
      new TreeMap<>();
  private final TreeMap<Integer, List<ReplicationEntry>> inFlight = new TreeMap<>();
  private final TreeMap<Integer, DependencyVector> reports = new TreeMap<>();
  private DependencyVector applying = DependencyVector.EMPTY;
  private long localSafe;

  StandInReceiver(int self, int[] all, DependencyVector durableReceived,
      DependencyVector recordedApplied, long forwardAfterMillis) {
    this.self = self;
    this.all = all.clone();
    this.forwardAfterMillis = forwardAfterMillis;
    for (int dc : all) {
      if (dc != self) {
        received.put(dc, durableReceived.get(dc));
        appliedUpTo.put(dc, Math.min(recordedApplied.get(dc), durableReceived.get(dc)));
        lastAdvanceMillis.put(dc, 0L);
        pending.put(dc, new TreeMap<>(LOG_ORDER));
      }
    }
  }

  @Override
  public List<Pull> pullsFrom(int peerDc, long nowMillis) {
    List<Pull> pulls = new ArrayList<>();
    for (Map.Entry<Integer, Long> origin : received.entrySet()) {
      if (origin.getKey() == peerDc
          || nowMillis - lastAdvanceMillis.get(origin.getKey()) >= forwardAfterMillis) {
        pulls.add(new Pull(origin.getKey(), origin.getValue()));
      }
    }
    return pulls;
  }

  @Override
  public void received(int fromDc, ReplicationBatch batch, DependencyVector peerReceived,
      long nowMillis) {
    int origin = batch.originDc();
    if (origin == self) {
      return;
    }
    if (batch.upToTimestamp() > received.get(origin)) {
      received.put(origin, batch.upToTimestamp());
      lastAdvanceMillis.put(origin, nowMillis);
    }
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() > appliedUpTo.get(origin)) {
        pending.get(origin).put(entry, entry);
      }
    }
    if (fromDc != self) {
      peerReported(fromDc, peerReceived);
    }
  }

  @Override
  public void peerReported(int peerDc, DependencyVector peerReceived) {
    reports.merge(peerDc, peerReceived, DependencyVector::merge);
  }

  @Override
  public List<Transaction> ready(long nowMillis) {
    List<Transaction> ready = new ArrayList<>();
    for (Map.Entry<Integer, TreeMap<ReplicationEntry, ReplicationEntry>> origin
        : pending.entrySet()) {
      if (inFlight.containsKey(origin.getKey()) || origin.getValue().isEmpty()) {
        continue;
      }
      List<ReplicationEntry> entries = next(origin.getValue());
      if (entries == null) {
        continue;
      }
      DependencyVector dependencies = DependencyVector.EMPTY;
      for (ReplicationEntry entry : entries) {
        dependencies = dependencies.merge(entry.dependencies());
      }
      // This DC's own commits are all visible here: its own entry counts as its safe timestamp.
      if (!appliedVector().atLeast(self, localSafe)
          .coversExcept(dependencies, origin.getKey())) {
        continue;
      }
      inFlight.put(origin.getKey(), entries);
      long last = entries.get(entries.size() - 1).timestamp();
      applying = applying.atLeast(origin.getKey(), last);
      List<Transaction.Part> parts = new ArrayList<>();
      for (ReplicationEntry entry : entries) {
        if (entry instanceof ReplicationEntry.Part part) {
          parts.add(new Transaction.Part(part.entity(), part.timestamp(), part.operations()));
        }
      }
      ready.add(new Transaction(origin.getKey(), entries.get(0).timestamp(), parts));
    }
    return ready;
  }

  /** The origin's next transaction if all its entries arrived, else null. */
  private static List<ReplicationEntry> next(TreeMap<ReplicationEntry, ReplicationEntry> entries) {
    ReplicationEntry first = entries.firstKey();
    if (first instanceof ReplicationEntry.Part) {
      return List.of(first);
    }
    ReplicationEntry.Decision decision = (ReplicationEntry.Decision) first;
    List<ReplicationEntry> transaction = new ArrayList<>();
    transaction.add(decision);
    for (ReplicationEntry entry : entries.tailMap(decision, false).keySet()) {
      if (entry.transactionId() == decision.transactionId()
          && entry instanceof ReplicationEntry.Part) {
        transaction.add(entry);
      }
    }
    return transaction.size() == decision.participants().size() + 1 ? transaction : null;
  }

  @Override
  public void applied(Transaction transaction, long nowMillis) {
    List<ReplicationEntry> entries = inFlight.remove(transaction.originDc());
    TreeMap<ReplicationEntry, ReplicationEntry> origin = pending.get(transaction.originDc());
    long last = 0;
    for (ReplicationEntry entry : entries) {
      origin.remove(entry);
      last = Math.max(last, entry.timestamp());
    }
    appliedUpTo.merge(transaction.originDc(), last, Math::max);
  }

  @Override
  public void localSafe(long timestamp) {
    localSafe = Math.max(localSafe, timestamp);
  }

  @Override
  public DependencyVector receivedVector() {
    return DependencyVector.of(received).atLeast(self, localSafe);
  }

  @Override
  public DependencyVector appliedVector() {
    TreeMap<Integer, Long> applied = new TreeMap<>();
    for (Map.Entry<Integer, Long> origin : received.entrySet()) {
      TreeMap<ReplicationEntry, ReplicationEntry> waiting = pending.get(origin.getKey());
      long bound = origin.getValue();
      if (!waiting.isEmpty()) {
        bound = Math.min(bound, waiting.firstKey().timestamp() - 1);
      }
      applied.put(origin.getKey(), Math.max(bound, 0));
    }
    return DependencyVector.of(applied);
  }

  @Override
  public DependencyVector applyingVector() {
    return applying.merge(appliedVector());
  }

  @Override
  public DependencyVector stableVector() {
    TreeMap<Integer, Long> stable = new TreeMap<>();
    DependencyVector own = receivedVector();
    for (int origin : all) {
      long least = own.get(origin);
      for (int dc : all) {
        if (dc != self) {
          least = Math.min(least, reports.getOrDefault(dc, DependencyVector.EMPTY).get(origin));
        }
      }
      stable.put(origin, least);
    }
    return DependencyVector.of(stable);
  }

  @Override
  public DependencyVector truncationBound() {
    return stableVector().meet(appliedVector().atLeast(self, localSafe));
  }

  @Override
  public int pending() {
    int count = 0;
    for (TreeMap<ReplicationEntry, ReplicationEntry> entries : pending.values()) {
      count += entries.size();
    }
    return count;
  }
}
