package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;

/**
 * The node's table of turns, steps and reads it sent to entities through the {@link
 * dev.troupe.txn.port.Transport} and whose answer ({@code TurnAnswer}, {@code StepAnswer}, {@code
 * ReadAnswer}) has not arrived: each caller's future by (kind, transaction or read id, entity).
 * The answers of coordinators' messages need no table here: a vote or an acknowledgement names
 * its transaction attempt, whose live {@link TransactionRun} the {@link DecisionDirectory} finds.
 *
 * <p><b>Bounds.</b> At most {@code troupe.transport.max-pending-replies} entries (past it a new
 * one is refused at once with {@code overloaded}); each waits at most its timeout, then its caller
 * fails with a {@link TimeoutException} exactly as a local turn whose ask timed out, and the entry
 * is removed. An answer that finds no entry (after the timeout, or a duplicate) is dropped and
 * counted ({@link #lateAnswers}): it is never delivered to another request, since an entry is
 * removed before its future completes and a key in flight is never reused (a second message
 * under the same key is refused, not queued behind the first).
 *
 * <p><b>Failing over fast</b> (docs/ARCHITECTURE.md, "Failing over fast"). A caller registered
 * with {@link #send} also says how to send its message, so the table can decide when: every answer
 * teaches it its partition's host, and the membership's verdicts ({@link #memberUnreachable},
 * {@link #memberReachable}, {@link #memberDowned}, {@link #memberRemoved}) tell it which
 * partitions have no live home ({@link PartitionHomes}, the pure core). A message for such a
 * partition is held, not sent into a dead member, and sent once the partition answers again;
 * held past {@code troupe.transport.rehoming-wait-millis} its caller gets {@code 503
 * unavailable} (never sent: nothing was done). When a member is declared down, every caller
 * waiting on it is answered at once: a read is sent again (held until its partition's new home
 * answers), a turn or step fails as a timeout ({@link MemberLostException}: the member may have
 * applied it before it died, so {@code outcome_unknown}, never a guess). While a partition moves,
 * reads go (their answers name the new home) and, if only turns wait, a read of one of their
 * entities is sent every {@code troupe.transport.rehoming-probe-interval-millis} (a probe). A
 * partition whose home was never learned is probed the same way while a member is in trouble
 * (its turns wait meanwhile): an unanswered probe makes the callers sent there without knowing
 * the home count as sent to the lost member ({@link PartitionHomes#mayHaveGoneTo}).
 *
 * <p>Thread-safe: callers register from request threads, answers arrive on the transport's
 * delivering thread, timeouts on the timers' thread, membership verdicts on an actor's. The
 * failover state ({@link PartitionHomes}, the held callers) is guarded by this table's lock; the
 * common path takes it only briefly.
 */
public final class RemoteReplies {
  /** What a pending reply answers (a read's "transaction id" is the asking node's read id). */
  enum Kind { TURN, STEP, READ }

  private record Key(Kind kind, long transactionId, EntityId entity) {}

  /**
   * A turn or step whose member was declared down before it answered: handled as a timeout (the
   * member may have applied it before it died), but answered at once instead of after the
   * pending-reply timeout.
   */
  static final class MemberLostException extends TimeoutException {
    MemberLostException(String message) {
      super(message);
    }
  }

  /** One caller. Its mutable fields are guarded by the table's lock. */
  private static final class Entry {
    final Key key;
    final CompletableFuture<TurnResult> future = new CompletableFuture<>();
    final int partition;
    final long timeoutMillis;
    /** How to send its message (null for a caller that sends itself, {@link #expect}). */
    final Runnable sender;
    /** Whether it waits here, unsent (or to be sent again). */
    boolean held;
    /** Times it was refused {@code not_owner} and held to go again. */
    int reroutes;
    /** Milliseconds of its timeout spent waiting for answers to sends of it so far. */
    long waitedMillis;
    /** The partition's known host when the message went, or {@link PartitionHomes#UNKNOWN}. */
    int sentTo = PartitionHomes.UNKNOWN;
    Timers.Scheduled timer;

    Entry(Key key, int partition, long timeoutMillis, Runnable sender) {
      this.key = key;
      this.partition = partition;
      this.timeoutMillis = timeoutMillis;
      this.sender = sender;
    }
  }

  private final ConcurrentHashMap<Key, Entry> pending = new ConcurrentHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final int maxPendingReplies;
  private final Timers timers;
  private final ToIntFunction<EntityId> partitionOf;
  private final long rehomingWaitMillis;
  private final long rehomingProbeIntervalMillis;
  /** A read unanswered this long is sent again, within its timeout. */
  private final long readResendMillis;
  private final LongAdder readsResent = new LongAdder();
  /** How many times one caller refused {@code not_owner} is sent again. */
  private final int maxReroutes;
  /** Guarded by {@code this}. */
  private final PartitionHomes homes;
  /** Partitions with a probe tick scheduled; guarded by {@code this}. */
  private final Set<Integer> probing = new HashSet<>();
  /** Sends a read of an entity, bypassing holds (set once by the node's remote reads). */
  private volatile Consumer<EntityId> probe = entity -> {};
  private final LongAdder lateAnswers = new LongAdder();
  private final LongAdder timedOut = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder held = new LongAdder();
  private final LongAdder heldTooLong = new LongAdder();
  private final LongAdder answeredAtDowning = new LongAdder();
  private final LongAdder resentAtDowning = new LongAdder();
  private final LongAdder probes = new LongAdder();
  private final LongAdder rerouted = new LongAdder();

  /** A table that never holds (one partition, no membership verdicts): tests of the bounds. */
  RemoteReplies(int maxPendingReplies, Timers timers) {
    this(maxPendingReplies, timers, entity -> 0, 1, 10_000, 500, Long.MAX_VALUE, 2);
  }

  /**
   * @param partitionOf the partition of an entity (the store's locator)
   * @param rehomingWaitMillis how long a caller is held for a partition without a live home
   * @param rehomingProbeIntervalMillis how often a moving partition with held turns is probed
   * @param readResendMillis how long a read waits for its answer before it is sent again (within
   *     its timeout)
   * @param maxReroutes how many times one caller is sent again after a {@code not_owner} refusal:
   *     each time it may be held for the rehoming wait, so this bounds how long a partition no
   *     node will write (its acquisition failing) keeps a caller
   */
  RemoteReplies(int maxPendingReplies, Timers timers, ToIntFunction<EntityId> partitionOf,
      int partitions, long rehomingWaitMillis, long rehomingProbeIntervalMillis,
      long readResendMillis, int maxReroutes) {
    this.maxPendingReplies = maxPendingReplies;
    this.timers = timers;
    this.partitionOf = partitionOf;
    this.homes = new PartitionHomes(partitions);
    this.rehomingWaitMillis = rehomingWaitMillis;
    this.rehomingProbeIntervalMillis = rehomingProbeIntervalMillis;
    this.readResendMillis = readResendMillis;
    this.maxReroutes = maxReroutes;
  }

  /** How a moving partition is probed: a read of {@code entity} that is never held. */
  void useProbe(Consumer<EntityId> probe) {
    this.probe = probe;
  }

  /**
   * Registers a caller whose message the caller sends itself, right after: the future completes
   * with the answer, or fails with a {@link TimeoutException} after {@code timeoutMillis}, or at
   * once with {@code overloaded} when the table is full or a message under the same key is still
   * unanswered. Such a caller is never held (a probe; tests).
   */
  CompletableFuture<TurnResult> expect(Kind kind, long transactionId, EntityId entity,
      long timeoutMillis) {
    return register(kind, transactionId, entity, timeoutMillis, null);
  }

  /**
   * Registers a caller and sends its message with {@code sender} now, or holds it while its
   * partition has no live home (see the class comment). The future completes as for {@link
   * #expect}, or fails with {@code unavailable} when held past the rehoming wait (never sent).
   */
  CompletableFuture<TurnResult> send(Kind kind, long transactionId, EntityId entity,
      long timeoutMillis, Runnable sender) {
    return register(kind, transactionId, entity, timeoutMillis, sender);
  }

  private CompletableFuture<TurnResult> register(Kind kind, long transactionId, EntityId entity,
      long timeoutMillis, Runnable sender) {
    if (size.incrementAndGet() > maxPendingReplies) {
      size.decrementAndGet();
      refused.increment();
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "too many turns waiting for an answer from other nodes"
              + " (troupe.transport.max-pending-replies); retry"));
    }
    Key key = new Key(kind, transactionId, entity);
    Entry entry = new Entry(key, partitionOf.applyAsInt(entity), timeoutMillis, sender);
    if (pending.putIfAbsent(key, entry) != null) {
      size.decrementAndGet();
      refused.increment();
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "a " + kind.name().toLowerCase() + " of transaction " + transactionId + " on " + entity
              + " is still waiting for its answer; retry"));
    }
    entry.future.whenComplete((ignored, failure) -> {
      synchronized (this) {
        if (entry.timer != null) {
          entry.timer.cancel();
        }
      }
    });
    boolean sendNow;
    synchronized (this) {
      sendNow = sender == null || mayGo(entry);
      if (sendNow) {
        markSent(entry);
      } else {
        hold(entry);
      }
    }
    if (sendNow && sender != null) {
      sender.run();
    }
    return entry.future;
  }

  /** Whether {@code entry}'s message may be sent now; starts a probe when it must wait. */
  private boolean mayGo(Entry entry) {
    return switch (homes.route(entry.partition)) {
      case SEND -> true;
      case HOLD -> false;
      case PROBE -> {
        if (entry.key.kind() == Kind.READ) {
          // A read's answer names the home too; an uncertain partition is probed all the same,
          // since only an unanswered probe marks it as the lost member's (PartitionHomes).
          if (homes.uncertain(entry.partition)) {
            startProbing(entry.partition);
          }
          yield true;
        }
        startProbing(entry.partition);
        yield false;
      }
    };
  }

  /**
   * Under the lock: the entry's message goes now; its answer is awaited for its timeout. A read
   * (safe to send twice) whose answer does not come within the read resend interval is sent
   * again, until its timeout has passed: a message sharding buffered for a partition being handed
   * off is dropped, and its caller would otherwise wait the whole timeout.
   */
  private void markSent(Entry entry) {
    entry.held = false;
    entry.sentTo = homes.knownHost(entry.partition);
    if (entry.timer != null) {
      entry.timer.cancel();
    }
    long timeoutMillis = entry.timeoutMillis;
    long remainingMillis = Math.max(1, timeoutMillis - entry.waitedMillis);
    boolean resendable = entry.key.kind() == Kind.READ && entry.sender != null
        && readResendMillis < remainingMillis;
    long waitMillis = resendable ? readResendMillis : remainingMillis;
    entry.timer = timers.schedule(waitMillis, () -> {
      if (resendable) {
        boolean again;
        synchronized (this) {
          again = pending.get(entry.key) == entry && !entry.held;
          if (again) {
            entry.waitedMillis += waitMillis;
            readsResent.increment();
            markSent(entry);
          }
        }
        if (again) {
          entry.sender.run();
        }
        return;
      }
      if (remove(entry)) {
        timedOut.increment();
        entry.future.completeExceptionally(new TimeoutException("no answer from "
            + entry.key.entity() + " within " + timeoutMillis + " ms"));
      }
    });
  }

  /** Reads sent again because their answer did not come within the read resend interval. */
  public long readsResent() {
    return readsResent.sum();
  }

  /** Under the lock: the entry waits here, unsent, for at most the rehoming wait. */
  private void hold(Entry entry) {
    entry.held = true;
    held.increment();
    if (entry.timer != null) {
      entry.timer.cancel();
    }
    entry.timer = timers.schedule(rehomingWaitMillis, () -> {
      boolean stillHeld;
      synchronized (this) {
        stillHeld = entry.held;
        if (stillHeld) {
          homes.heldTooLong(entry.partition);
        }
      }
      if (stillHeld && remove(entry)) {
        heldTooLong.increment();
        entry.future.completeExceptionally(new TroupeException(ErrorCode.UNAVAILABLE,
            "the partition of " + entry.key.entity() + " has no live home yet (its member is"
                + " unreachable, down or being replaced); nothing was sent or done; retry"));
      }
    });
  }

  /** Under the lock: probes {@code partition} now and every probe interval while turns wait. */
  private void startProbing(int partition) {
    if (!probing.add(partition)) {
      return;
    }
    probeNow(partition);
  }

  private void probeTick(int partition) {
    synchronized (this) {
      if (homes.route(partition) != PartitionHomes.Route.PROBE || !anyWaiting(partition)) {
        probing.remove(partition);
        return;
      }
      probeNow(partition);
    }
  }

  /** Under the lock: one probe (a read of a waiting caller's entity) and the next tick. */
  private void probeNow(int partition) {
    EntityId entity = null;
    for (Entry entry : pending.values()) {
      if (entry.partition == partition && waiting(entry)) {
        entity = entry.key.entity();
        break;
      }
    }
    if (entity != null) {
      probes.increment();
      homes.probed(partition);
      EntityId probed = entity;
      // Off the lock: the probe registers itself in this table.
      timers.schedule(0, () -> probe.accept(probed));
    }
    timers.schedule(rehomingProbeIntervalMillis, () -> probeTick(partition));
  }

  private boolean anyWaiting(int partition) {
    for (Entry entry : pending.values()) {
      if (entry.partition == partition && waiting(entry)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Under the lock: whether {@code entry} waits for its partition's home to be known: held, or
   * sent without knowing it (a probe's answer tells whether it went to a member now lost). A
   * probe itself ({@link #expect}) is not: probing for a probe would never stop.
   */
  private static boolean waiting(Entry entry) {
    return entry.held || (entry.sender != null && entry.sentTo == PartitionHomes.UNKNOWN);
  }

  /** An answer arrived: completes its caller, or drops and counts it when nobody waits. */
  void answer(Kind kind, long transactionId, EntityId entity, TurnResult result) {
    answer(kind, transactionId, entity, result, PartitionHomes.UNKNOWN);
  }

  /**
   * An answer arrived from {@code fromNode} (which therefore hosts the entity's partition):
   * completes its caller, or drops and counts it when nobody waits; sends what waited for the
   * partition's home.
   */
  void answer(Kind kind, long transactionId, EntityId entity, TurnResult result, int fromNode) {
    boolean notOwner = result instanceof TurnResult.Failed failed
        && failed.error().code() == ErrorCode.NOT_OWNER;
    if (fromNode != PartitionHomes.UNKNOWN && !notOwner) {
      learned(partitionOf.applyAsInt(entity), fromNode);
    }
    Key key = new Key(kind, transactionId, entity);
    Entry entry = pending.get(key);
    if (entry != null && notOwner && fromNode != PartitionHomes.UNKNOWN
        && rerouted(entry, fromNode)) {
      return;
    }
    if (entry == null || !remove(entry)) {
      lateAnswers.increment();
      return;
    }
    entry.future.complete(result);
  }

  /**
   * A turn or read refused {@code not_owner} by {@code fromNode} (the partition moved away, or is
   * being handed off): nothing was done, so it waits for the partition's new home and goes again
   * there, transparently, at most {@code troupe.transport.max-reroutes} times. A step is not: its transaction's
   * earlier steps stayed with the old host.
   */
  private boolean rerouted(Entry entry, int fromNode) {
    synchronized (this) {
      if (entry.sender == null || entry.key.kind() == Kind.STEP || entry.held
          || entry.reroutes >= maxReroutes || pending.get(entry.key) != entry) {
        return false;
      }
      entry.reroutes++;
      rerouted.increment();
      homes.refused(entry.partition, fromNode);
      hold(entry);
      startProbing(entry.partition);
      return true;
    }
  }


  private void learned(int partition, int node) {
    List<Entry> release;
    synchronized (this) {
      if (homes.knownHost(partition) == node && homes.route(partition)
          == PartitionHomes.Route.SEND) {
        return;
      }
      if (!homes.answered(partition, node)) {
        return;
      }
      release = releaseHeld(List.of(partition));
    }
    release.forEach(entry -> entry.sender.run());
  }

  /** Under the lock: the held entries of {@code partitions} that may go now, marked sent. */
  private List<Entry> releaseHeld(List<Integer> partitions) {
    List<Entry> release = new ArrayList<>();
    for (Entry entry : pending.values()) {
      if (entry.held && partitions.contains(entry.partition) && mayGo(entry)) {
        markSent(entry);
        release.add(entry);
      }
    }
    return release;
  }

  /**
   * The failure detector lost {@code node}: its partitions' messages wait; reads to it go again;
   * the partitions of messages sent without knowing their home are probed (they may be {@code
   * node}'s: then their callers are answered at its downing, see {@link PartitionHomes}).
   */
  public void memberUnreachable(int node) {
    synchronized (this) {
      homes.unreachable(node);
      for (Entry entry : pending.values()) {
        // A read is safe to send twice: held now, sent again once its partition has a home.
        if (!entry.held && entry.sentTo == node && entry.key.kind() == Kind.READ
            && entry.sender != null) {
          hold(entry);
        } else if (waiting(entry) && !entry.held && homes.uncertain(entry.partition)) {
          startProbing(entry.partition);
        }
      }
    }
  }

  /** The failure detector reaches {@code node} again: what waited for it goes. */
  public void memberReachable(int node) {
    List<Entry> release;
    synchronized (this) {
      homes.reachable(node);
      // Not only its partitions: those of unknown home held while it was in trouble go too.
      release = releaseWhatMayGo();
    }
    release.forEach(entry -> entry.sender.run());
  }

  /** Under the lock: every held entry that may go now (after a verdict), marked sent. */
  private List<Entry> releaseWhatMayGo() {
    List<Entry> release = new ArrayList<>();
    for (Entry entry : pending.values()) {
      if (entry.held && mayGo(entry)) {
        markSent(entry);
        release.add(entry);
      }
    }
    return release;
  }

  /**
   * {@code node} was declared down: every caller waiting on it is answered now (see the class
   * comment); its partitions' messages wait until it is removed and they have new homes.
   */
  public void memberDowned(int node) {
    synchronized (this) {
      homes.downed(node);
    }
    answerCallersOf(node, "was declared down");
  }

  /**
   * Answers every caller whose message went to {@code node}, which will never answer (declared
   * down, or removed): a read is held to go again, a turn or step fails as a timeout now.
   */
  private void answerCallersOf(int node, String what) {
    List<Entry> lost = new ArrayList<>();
    synchronized (this) {
      for (Entry entry : pending.values()) {
        if (entry.held || !homes.mayHaveGoneTo(entry.sentTo, entry.partition, node)) {
          continue;
        }
        if (entry.key.kind() == Kind.READ && entry.sender != null) {
          resentAtDowning.increment();
          hold(entry);
        } else {
          lost.add(entry);
        }
      }
    }
    for (Entry entry : lost) {
      if (remove(entry)) {
        if (entry.sender != null) {
          answeredAtDowning.increment(); // not a probe (its own read, its answer ignored)
        }
        entry.future.completeExceptionally(new MemberLostException("node " + node + ", which"
            + " hosted the partition of " + entry.key.entity() + ", " + what + " before it"
            + " answered; it may have applied the " + entry.key.kind().name().toLowerCase()));
      }
    }
  }

  /**
   * {@code node} was removed: its callers are answered (as at a downing), its partitions move;
   * reads for them go, turns wait for a probe.
   */
  public void memberRemoved(int node) {
    // A member that left (SIGTERM) is removed without a downing: its callers are answered now.
    answerCallersOf(node, "left the cluster");
    List<Entry> release;
    synchronized (this) {
      homes.removed(node);
      release = releaseWhatMayGo();
    }
    release.forEach(entry -> entry.sender.run());
  }

  /** This table as what acts on the membership's verdicts. */
  dev.troupe.runtime.cluster.MemberVerdicts.Listener verdictListener() {
    return new dev.troupe.runtime.cluster.MemberVerdicts.Listener() {
      @Override
      public void unreachable(int nodeId) {
        memberUnreachable(nodeId);
      }

      @Override
      public void reachable(int nodeId) {
        memberReachable(nodeId);
      }

      @Override
      public void downed(int nodeId) {
        memberDowned(nodeId);
      }

      @Override
      public void removed(int nodeId) {
        memberRemoved(nodeId);
      }
    };
  }

  private boolean remove(Entry entry) {
    if (pending.remove(entry.key, entry)) {
      size.decrementAndGet();
      return true;
    }
    return false;
  }

  /** Callers waiting now. */
  public int pendingCount() {
    return size.get();
  }

  /** Answers dropped because nobody waited for them any more (late or duplicated). */
  public long lateAnswers() {
    return lateAnswers.sum();
  }

  /** Callers that got no answer within their timeout. */
  public long timedOut() {
    return timedOut.sum();
  }

  /** Callers refused at once (table full, or their key still in flight). */
  public long refused() {
    return refused.sum();
  }

  /** Times a caller was held for a partition without a live home (counted each time). */
  public long held() {
    return held.sum();
  }

  /** Held callers refused {@code unavailable} after the rehoming wait (never sent). */
  public long heldTooLong() {
    return heldTooLong.sum();
  }

  /** Turns and steps answered at once when their member was declared down (outcome unknown). */
  public long answeredAtDowning() {
    return answeredAtDowning.sum();
  }

  /** Reads waiting on a member declared down, held and sent again to the new home. */
  public long resentAtDowning() {
    return resentAtDowning.sum();
  }

  /** Turns and reads refused {@code not_owner} and sent again to the partition's new home. */
  public long rerouted() {
    return rerouted.sum();
  }

  /** Reads sent to find a moving partition's new home. */
  public long probes() {
    return probes.sum();
  }
}
