package dev.troupe.runtime.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.replication.PullRequest;
import dev.troupe.replication.ReceiverCore;
import dev.troupe.replication.ReceiverCore.Effect;
import dev.troupe.replication.ReceiverCore.Input;
import dev.troupe.replication.ReceiverLimits;
import dev.troupe.replication.RemoteApplication;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.ReplicationLog;
import dev.troupe.txn.Turn;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.concurrent.ExecutionContextExecutor;

/**
 * The runtime shell of causal replication between data centres (docs/ARCHITECTURE.md, "Several
 * data centres", "The replication shell"): runs one DC's {@link ReceiverCore} over the store's
 * {@link ReplicationLog} and applies remote transactions through {@link Troupe}. The core decides
 * everything (what to pull from whom, when a received transaction may be applied, the received,
 * applied and stable vectors, when to record and truncate); this shell only feeds it inputs and
 * executes its effects:
 *
 * <ul>
 *   <li>{@code PersistBatch}: {@link ReplicationLog#appendReceived}, then {@code BatchPersisted}
 *       (the future {@link #received} returned completes then: a pull is acknowledged only once
 *       durable).
 *   <li>{@code PublishApplyingVector}: the vector the store's applying-vector source returns from
 *       then on. Executed before the {@code Apply} that follows it, so a local
 *       transaction that could see the remote ones records a dependency on them.
 *   <li>{@code Apply} (a run of consecutive transactions of one origin, "Batched application"):
 *       the node's clock observes every timestamp of the run (a local write after it is ordered
 *       after it everywhere, last writer wins included); then, per entity, one {@link
 *       Turn.ApplyReplicated} with a segment of every transaction of the run touching it: through
 *       {@link Troupe#applyReplicated(EntityId, Turn.ApplyReplicated)} when the run touches one
 *       entity, or as one dynamic transaction of one per entity ({@link
 *       Troupe#applyReplicated(Map)}, whose decision the store flags as a replica application)
 *       when it touches several, so the whole run becomes visible at once; its completion feeds
 *       {@code Applied} or {@code ApplicationFailed} (the core retries the same run after {@code
 *       retry-delay-millis}).
 *   <li>{@code RecordAppliedVector}: {@link ReplicationLog#recordApplied}; {@code Truncate}: {@link
 *       ReplicationLog#truncate}.
 * </ul>
 *
 * <p><b>Concurrency: one lock, not an actor.</b> Inputs arrive on many threads: the server's
 * pullers ({@link #received}, {@link #pullsFrom}, {@link #linkFailed}), its request threads
 * ({@link #serve} reports the puller's received vector), the shell's storage thread (a persisted
 * batch), the entity actors' completions (an applied transaction) and the tick. They are fed to
 * the core one at a time under this object's monitor; an input arriving while effects run on the
 * same thread (a future completed at once) is queued and fed after them, so the core never sees a
 * nested call (the pattern of {@code TransactionRun}). Every effect only starts asynchronous work
 * (a turn; the replication log's synced writes run on the shell's own storage thread, in order),
 * so the monitor is held briefly. An actor would serialize the same way but force the server's
 * synchronous questions ({@link #pullsFrom}, the vectors) through asks; the core is pure and
 * cheap, so a monitor is the thinner shell. What readers ask without the lock ({@link
 * #appliedVector}, {@link #causalToken}, the applying-vector source the store's writers call) is a
 * volatile snapshot refreshed after every input.
 *
 * <p><b>Time.</b> The core receives physical milliseconds with every input and a tick every
 * {@code tick-interval-millis} (on the engine's Pekko scheduler): forwarding, retries, the applied
 * vector's record and truncation are decided on them.
 *
 * <p><b>Recovery.</b> At start the core begins from the log's durable received and applied
 * vectors, and the shell re-feeds it the received entries above the applied vector ({@code
 * RecoveredEntries}, read per origin with {@link ReplicationLog#read}); those applied before the
 * crash but after the last record are applied again, which their markers turn into no-ops
 * ({@link Turn.ApplyReplicated}): nothing is lost, nothing applied twice.
 */
public final class ReplicationShell implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ReplicationShell.class);
  /** The longest {@link #whenVisible} waits, whatever it is asked (the scheduler's range). */
  private static final long MAX_WAIT_MILLIS = TimeUnit.DAYS.toMillis(1);

  private final Troupe troupe;
  private final ReplicationSettings settings;
  private final ReplicationLog replicationLog;
  private final int dataCentreId;
  /**
   * The peers' names now: {@code settings}' at start, then as {@link #peersChanged} set them (a
   * DC added or removed at runtime). Written under this object's monitor.
   */
  private volatile List<String> peerNames;
  /** Guarded by this object's monitor, like {@link #pending} and {@link #draining}. */
  private final ReceiverCore core;
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private boolean draining;
  /** Every bound the core asked the log to be truncated below (under this object's monitor). */
  private DependencyVector truncationWanted = DependencyVector.EMPTY;
  /**
   * What was passed to the log: the wanted bound as the clamps allowed then (written on the
   * storage thread only).
   */
  private volatile DependencyVector truncationIssued = DependencyVector.EMPTY;
  /** When a truncation was last asked of the storage thread (under this object's monitor). */
  private long truncationIssuedAtMillis;
  /** What the store's writers stamp local entries with; raised before each application. */
  private volatile DependencyVector applyingVector;
  /** The core's vectors after the last input, for readers that take no lock. */
  private volatile DependencyVector appliedVector;
  private volatile DependencyVector receivedVector;
  private volatile DependencyVector stableVector;
  /** {@link #whenVisible} callers waiting, guarded by its own monitor. */
  private final List<Waiter> waiters = new ArrayList<>();
  private final Scheduler scheduler;
  private final ExecutionContextExecutor executor;
  private final Cancellable ticks;
  /** Where the replication log's writes run, one at a time in order ({@link #onStorageThread}). */
  private final ExecutorService storageThread = Executors.newSingleThreadExecutor(runnable -> {
    Thread thread = new Thread(runnable, "troupe-replication-storage");
    thread.setDaemon(true);
    return thread;
  });
  /**
   * The latest record of the applied vector: a truncation waits for it, so the log never loses
   * an entry that the recorded applied vector (what a restart re-feeds from) does not cover.
   */
  private CompletableFuture<Void> lastRecord = CompletableFuture.completedFuture(null);
  private volatile boolean closed;
  /** When this shell started (physical time): lags count from here at most. */
  private final long startedMillis = System.currentTimeMillis();

  /**
   * Truncation holds of bootstrap images being served or just served (docs/ARCHITECTURE.md,
   * "Bootstrapping a new data centre"), guarded by their own monitor: the log keeps every entry
   * above a hold's vector while it lasts.
   */
  private final List<TruncationHold> holds = new ArrayList<>();

  /**
   * The log keeps every entry above {@code vector} (per origin) until {@link #release}d and then
   * {@code afterMillis} more, or until the DC it is held for reports a received vector covering
   * it with a pull.
   */
  public final class TruncationHold implements AutoCloseable {
    private final int forDc;
    private final DependencyVector vector;
    private volatile long untilMillis = Long.MAX_VALUE;

    private TruncationHold(int forDc, DependencyVector vector) {
      this.forDc = forDc;
      this.vector = vector;
    }

    public DependencyVector vector() {
      return vector;
    }

    /** Keeps the hold {@code afterMillis} from now, then lets it go. */
    public void release(long afterMillis) {
      untilMillis = System.currentTimeMillis() + afterMillis;
    }

    /** Lets it go now. */
    @Override
    public void close() {
      synchronized (holds) {
        holds.remove(this);
      }
    }
  }

  /**
   * The start (or end) vector of a bootstrap image served now: the recorded applied vector (a
   * point that cuts no applied multi-entity transaction between its decision and its parts, so
   * every transaction of a remote origin at or below it is applied here and whole, and every entry
   * above it is still in the log), with this DC's own entry at {@link
   * ReplicationLog#localImageStart} (every local entry at or below it is in the store and its
   * entity states, and no local multi-entity transaction is cut between its decision and a part
   * the states miss). Read before the first entity.
   */
  public DependencyVector imageVector() {
    return replicationLog.appliedVector()
        .atLeast(dataCentreId, replicationLog.localImageStart());
  }

  /**
   * The end vector of a bootstrap image: as {@link #imageVector}, with this DC's own entry at the
   * local safe timestamp; read after the last entity (no state holds a later transaction).
   */
  public DependencyVector imageEndVector() {
    return replicationLog.appliedVector()
        .atLeast(dataCentreId, replicationLog.localSafeTimestamp());
  }

  /**
   * Holds the log above {@link #imageVector} for a bootstrap image served to {@code forDc}; close
   * or {@link TruncationHold#release} it when the image ends.
   */
  public TruncationHold holdTruncation(int forDc) {
    synchronized (holds) {
      // Taken under the holds' monitor: a truncation computed concurrently sees the hold.
      TruncationHold hold = new TruncationHold(forDc, imageVector());
      holds.add(hold);
      return hold;
    }
  }

  /** {@code below} lowered, per origin, to every live hold's entry. */
  private DependencyVector boundedByHolds(DependencyVector below) {
    long now = System.currentTimeMillis();
    java.util.TreeMap<Integer, Long> bounded = new java.util.TreeMap<>(below.entries());
    synchronized (holds) {
      holds.removeIf(hold -> hold.untilMillis <= now);
      for (TruncationHold hold : holds) {
        bounded.replaceAll((origin, entry) -> Math.min(entry, hold.vector.get(origin)));
      }
    }
    return new DependencyVector(bounded);
  }

  /** A pull of {@code pullerDc} showing it received everything a hold for it keeps. */
  private void releaseHoldsCoveredBy(int pullerDc, DependencyVector pullerReceived) {
    synchronized (holds) {
      if (!holds.isEmpty()) {
        holds.removeIf(hold -> hold.forDc == pullerDc
            && pullerReceived.coversExcept(hold.vector, pullerDc));
      }
    }
  }

  /** An input, with the future to complete once the batch it carries is durable (or null). */
  private record Pending(Input input, CompletableFuture<Void> durable) {}

  private record Waiter(DependencyVector token, CompletableFuture<Boolean> visible) {}

  private ReplicationShell(Troupe troupe, ReplicationSettings settings) {
    Invariants.check(settings.enabled(), "replication needs a data centre name");
    Invariants.check(troupe.settings().storage().dataCentreId() == settings.dataCentreId(),
        "the store's data centre id %s is not the id %s of the data centre's name %s",
        troupe.settings().storage().dataCentreId(), settings.dataCentreId(),
        settings.dataCentreName());
    this.troupe = troupe;
    this.settings = settings;
    this.dataCentreId = settings.dataCentreId();
    this.peerNames = settings.peerNames();
    this.replicationLog = troupe.store().replicationLog();
    this.core = new ReceiverCore(dataCentreId, settings.peerIds(), new ReceiverLimits(
        settings.maxApplyingTransactions(), settings.forwardAfterMillis(),
        settings.retryDelayMillis(), settings.appliedRecordIntervalMillis(),
        settings.truncateIntervalMillis(), settings.maxTransactionsPerApplication(),
        settings.maxEntitiesPerApplication()));
    DependencyVector recordedApplied = replicationLog.appliedVector();
    // Everything applied before the last record is visible; the core raises it from here on.
    this.applyingVector = recordedApplied;
    this.appliedVector = recordedApplied;
    this.receivedVector = replicationLog.receivedVector();
    this.stableVector = DependencyVector.EMPTY;
    replicationLog.setApplyingVectorSource(() -> applyingVector);
    this.scheduler = troupe.actorSystem().scheduler();
    this.executor = troupe.actorSystem().executionContext();
    recover(recordedApplied);
    Duration interval = Duration.ofMillis(settings.tickIntervalMillis());
    this.ticks = scheduler.scheduleWithFixedDelay(interval, interval,
        this::tick, executor);
  }

  /**
   * Starts replication for the engine's DC: {@code settings} must name the DC whose id the
   * engine's store stamps its commits with (a {@link dev.troupe.runtime.RuntimeSettings} with
   * {@code troupe.dc.name}). Re-feeds what was received and not applied before a restart. Start
   * it before the engine takes client writes: until then the store stamps local entries with an
   * empty applying vector, so a write that read a remote transaction applied before a restart
   * would not depend on it.
   */
  public static ReplicationShell start(Troupe troupe, ReplicationSettings settings) {
    return new ReplicationShell(troupe, settings);
  }

  /**
   * The core's first input: the durable vectors and the received entries above the recorded
   * applied vector, read per origin in log order (a new DC feeds empty ones).
   */
  private void recover(DependencyVector applied) {
    DependencyVector received = replicationLog.receivedVector();
    DependencyVector truncated = replicationLog.truncatedVector();
    List<ReplicationEntry> entries = new ArrayList<>();
    for (int origin : settings.peerIds()) {
      // Above what was truncated: a peer removed and configured again may have lost its applied
      // entry (the applied vector is recorded whole) while its truncated entries are gone.
      long after = Math.max(applied.get(origin), truncated.get(origin));
      long upTo = received.get(origin);
      while (after < upTo) {
        ReplicationBatch batch =
            replicationLog.read(origin, after, settings.pullBatchMaxEntries());
        entries.addAll(batch.entries());
        if (batch.upToTimestamp() <= after) {
          break;
        }
        after = batch.upToTimestamp();
      }
    }
    feed(new Input.RecoveredEntries(received, applied, entries), null);
    if (!entries.isEmpty()) {
      log.info("replication: {} received entries above the recorded applied vector are fed again"
          + " (those applied already are skipped by their markers)", entries.size());
    }
  }

  /** Whether the shell is closed (or stopped after an internal error). */
  public boolean isClosed() {
    return closed;
  }

  /** This DC's id. */
  public int dataCentreId() {
    return dataCentreId;
  }

  /**
   * A peer's pull of {@code originDc}'s entries after {@code afterTimestamp} (at most {@code
   * maxEntries}, and at most {@code pull-batch-max-entries}); {@code pullerReceived} is the
   * puller's received vector, which the stable vector (and so truncation) is taken over. The
   * origin may be this DC or, for transitive forwarding, another one whose entries this DC holds.
   */
  public ReplicationBatch serve(int pullerDc, DependencyVector pullerReceived, int originDc,
      long afterTimestamp, int maxEntries) {
    feed(new Input.PeerReported(pullerDc, pullerReceived), null);
    releaseHoldsCoveredBy(pullerDc, pullerReceived);
    int limit = Math.max(1, Math.min(maxEntries, settings.pullBatchMaxEntries()));
    return replicationLog.read(originDc, afterTimestamp, limit);
  }

  /**
   * Like {@link #serve} without the puller's report: the later batches of a replication stream,
   * whose puller reported its received vector when it opened the stream (with {@link #serve}).
   * Takes no lock: an idle stream re-reads the log every few milliseconds.
   */
  public ReplicationBatch serveMore(int originDc, long afterTimestamp, int maxEntries) {
    int limit = Math.max(1, Math.min(maxEntries, settings.pullBatchMaxEntries()));
    return replicationLog.read(originDc, afterTimestamp, limit);
  }

  /** The pulls to make from {@code peerDc} now (its own entries, and others' while forwarding). */
  public synchronized List<PullRequest> pullsFrom(int peerDc, long nowMillis) {
    return core.pullsFrom(peerDc, nowMillis);
  }

  /**
   * A batch pulled from {@code fromDc}; completes once durable here (then the puller may ask
   * for what follows). Entries received twice are harmless.
   */
  public CompletableFuture<Void> received(int fromDc, ReplicationBatch batch) {
    CompletableFuture<Void> durable = new CompletableFuture<>();
    feed(new Input.BatchReceived(fromDc, batch), durable);
    return durable;
  }

  /**
   * The peers changed at runtime (a DC added or removed: {@code names} is every peer from now
   * on, valid names of distinct ids other than this DC's): the core plans pulls from the new
   * set, counts a new peer as 0 in the stable vector until it reports, and no longer counts a
   * removed one (docs/ARCHITECTURE.md, "Adding and removing data centres"). The caller starts
   * and stops the pullers.
   */
  public void peersChanged(List<String> names) {
    List<String> copy = List.copyOf(names);
    Set<Integer> ids = new TreeSet<>();
    for (String name : copy) {
      ids.add(DataCentreIds.of(name));
    }
    Invariants.check(ids.size() == copy.size() && !ids.contains(dataCentreId),
        "peers %s repeat an id or name this data centre", copy);
    synchronized (this) {
      peerNames = copy;
    }
    feed(new Input.PeersChanged(ids), null);
    // A peer added here may send messages to receivers homed here: delivery reads its log too.
    dev.troupe.runtime.messages.MessageDelivery delivery = troupe.messageDelivery();
    if (delivery != null) {
      delivery.peersAdded(ids);
    }
    log.info("replication: peers are now {}", copy);
  }

  /** The peers' names now (configured, or as last changed at runtime). */
  public List<String> peerNames() {
    return peerNames;
  }

  /** A pull from {@code peerDc} failed (unreachable, refused, bad bytes). */
  public void linkFailed(int peerDc) {
    feed(new Input.LinkFailed(peerDc), null);
  }

  /** Per remote DC, the timestamp up to which its entries are durably here. */
  public DependencyVector receivedVector() {
    return receivedVector;
  }

  /** Per remote DC, the timestamp up to which its transactions are visible here. */
  public DependencyVector appliedVector() {
    return appliedVector;
  }

  /** Per DC, what every configured DC has received (the replication log is kept above it). */
  public DependencyVector stableVector() {
    return stableVector;
  }

  /**
   * The causal token of a client that read or wrote here now: the applied vector, with this DC's
   * own entry at the clock's current timestamp (every commit acknowledged here so far is at or
   * below it). Another DC serves the client only once its applied vector covers the token.
   */
  public DependencyVector causalToken() {
    return appliedVector.atLeast(dataCentreId, troupe.currentTimestamp());
  }

  /**
   * Completes with true once this DC's applied vector covers {@code token} (its entry for this DC
   * ignored: everything of this DC is visible here), with false after {@code timeoutMillis} (at
   * most a day; the server waits {@code token-wait-max-millis}) or when the shell closes.
   */
  public CompletableFuture<Boolean> whenVisible(DependencyVector token, long timeoutMillis) {
    if (isVisible(token)) {
      return CompletableFuture.completedFuture(true);
    }
    CompletableFuture<Boolean> visible = new CompletableFuture<>();
    if (closed || timeoutMillis <= 0) {
      visible.complete(false);
      return visible;
    }
    Waiter waiter = new Waiter(token, visible);
    synchronized (waiters) {
      waiters.add(waiter);
    }
    long waitMillis = Math.min(timeoutMillis, MAX_WAIT_MILLIS);
    Cancellable timeout = scheduler.scheduleOnce(Duration.ofMillis(waitMillis), () -> {
      synchronized (waiters) {
        waiters.remove(waiter);
      }
      visible.complete(false);
    }, executor);
    visible.whenComplete((result, failure) -> timeout.cancel());
    // The applied vector may have moved between the first check and the registration.
    if (isVisible(token)) {
      synchronized (waiters) {
        waiters.remove(waiter);
      }
      visible.complete(true);
    }
    return visible;
  }

  private boolean isVisible(DependencyVector token) {
    return appliedVector.coversExcept(token, dataCentreId);
  }

  /** Lags, pending remote transactions and the stable vector's age, for metrics and the CLI. */
  public synchronized ReplicationStatus status() {
    long nowMillis = System.currentTimeMillis();
    DependencyVector applied = core.appliedVector();
    DependencyVector received = core.receivedVector();
    DependencyVector stable = core.stableVector();
    List<ReplicationStatus.PeerStatus> peers = new ArrayList<>();
    List<String> names = peerNames;
    long pendingTotal = 0;
    for (int i = 0; i < names.size(); i++) {
      int peer = DataCentreIds.of(names.get(i));
      long pendingOfPeer = core.pendingTransactions(peer);
      pendingTotal += pendingOfPeer;
      peers.add(new ReplicationStatus.PeerStatus(names.get(i), peer, pendingOfPeer,
          ageMillis(applied.get(peer), nowMillis), received.get(peer), applied.get(peer)));
    }
    long oldestStable = stable.get(dataCentreId);
    for (String name : names) {
      oldestStable = Math.min(oldestStable,
          stable.get(DataCentreIds.of(name)));
    }
    return new ReplicationStatus(dataCentreId, peers, pendingTotal, core.transactionsInFlight(),
        ageMillis(oldestStable, nowMillis), received, applied, stable,
        replicationLog.entryCount());
  }

  /**
   * How far behind physical time a timestamp is (0 for one ahead of it); no timestamp yet (0)
   * counts from this shell's start, so a DC that never heard of a peer shows its uptime.
   */
  private long ageMillis(long timestamp, long nowMillis) {
    long since = timestamp == 0 ? startedMillis : HybridLogicalClock.toMillis(timestamp);
    return Math.max(0, nowMillis - since);
  }

  // ---------------------------------------------------------------- the core and its effects

  /** Feeds one input to the core and runs its effects (see the class comment's concurrency). */
  private void feed(Input input, CompletableFuture<Void> durable) {
    synchronized (this) {
      if (closed) {
        if (durable != null) {
          durable.completeExceptionally(
              new TroupeException(ErrorCode.UNAVAILABLE, "replication is closed"));
        }
        return;
      }
      pending.add(new Pending(input, durable));
      if (draining) {
        return;
      }
      draining = true;
      try {
        Pending next;
        while ((next = pending.poll()) != null) {
          List<CompletableFuture<Void>> persisted = new ArrayList<>();
          List<Effect> effects;
          try {
            effects = core.handle(next.input(), System.currentTimeMillis());
          } catch (RuntimeException violated) {
            // A violated invariant: the core's state can no longer be trusted. Replication
            // stops (every later input is refused) rather than apply anything wrongly, and the
            // node with it (a bug stops the node); the store keeps what was received, and a
            // restart re-feeds it.
            log.error("replication stopped: the receiver core refused {}", next.input(),
                violated);
            stop(next, violated);
            troupe.reportFatalError("replication", violated);
            return;
          }
          for (Effect effect : effects) {
            run(effect, persisted);
          }
          completeWhenDurable(next.durable(), persisted);
        }
      } finally {
        draining = false;
        appliedVector = core.appliedVector();
        receivedVector = core.receivedVector();
        stableVector = core.stableVector();
      }
    }
    wakeWaiters();
  }

  /** After a violated invariant: refuses everything from here on (see {@link #feed}). */
  private void stop(Pending failed, RuntimeException violated) {
    closed = true;
    if (ticks != null) { // null while recovering, in the constructor
      ticks.cancel();
    }
    TroupeException stopped = new TroupeException(ErrorCode.UNAVAILABLE,
        "replication stopped after an internal error; see the log");
    if (failed.durable() != null) {
      failed.durable().completeExceptionally(stopped);
    }
    Pending queued;
    while ((queued = pending.poll()) != null) {
      if (queued.durable() != null) {
        queued.durable().completeExceptionally(stopped);
      }
    }
  }

  /**
   * Completes {@code durable} (a {@link #received} caller's future, may be null) once every batch
   * its input asked to persist is durable: at once if none (nothing new in it), exceptionally if
   * one was refused (a null among {@code persisted}) or failed.
   */
  private static void completeWhenDurable(CompletableFuture<Void> durable,
      List<CompletableFuture<Void>> persisted) {
    if (durable == null) {
      return;
    }
    if (persisted.contains(null)) {
      durable.completeExceptionally(new TroupeException(ErrorCode.INVALID_REQUEST,
          "the replication batch was refused; see the log"));
      return;
    }
    CompletableFuture.allOf(persisted.toArray(CompletableFuture[]::new))
        .whenComplete((ignored, failure) -> {
          if (failure != null) {
            durable.completeExceptionally(failure);
          } else {
            durable.complete(null);
          }
        });
  }

  private void run(Effect effect, List<CompletableFuture<Void>> persisted) {
    switch (effect) {
      case Effect.PersistBatch persist -> {
        ReplicationBatch batch = persist.batch();
        CompletableFuture<Void> write = onStorageThread(() -> replicationLog.appendReceived(
            batch.originDc(), batch.entries(), batch.upToTimestamp()));
        persisted.add(write);
        write.whenComplete((ignored, failure) -> {
          if (failure != null) {
            // Not durable, so not received: the core asks for it again with the next pull.
            log.warn("replication: persisting {} entries of DC {} failed: {}",
                batch.entries().size(), batch.originDc(), failure.toString());
          } else {
            feed(new Input.BatchPersisted(persist.peerDc(), batch), null);
          }
        });
      }
      case Effect.BatchRefused refused -> {
        log.warn("replication: a batch of DC {} from DC {} was refused: {}", refused.originDc(),
            refused.peerDc(), refused.reason());
        persisted.add(null);
      }
      case Effect.PublishApplyingVector publish ->
          applyingVector = applyingVector.merge(publish.applying());
      case Effect.Apply apply -> apply(apply);
      case Effect.RecordAppliedVector record -> {
        CompletableFuture<Void> recorded =
            onStorageThread(() -> replicationLog.recordApplied(record.applied()));
        recorded.whenComplete((ignored, failure) -> {
          if (failure != null) {
            log.warn("replication: recording the applied vector failed: {}", failure.toString());
          }
        });
        lastRecord = recorded;
      }
      case Effect.Truncate truncate -> {
        truncationWanted = truncationWanted.merge(truncate.below());
        truncateAsFarAsAllowed();
      }
    }
  }

  /**
   * Truncates the log below what the core last asked ({@code truncationWanted}), lowered by what
   * this shell must still keep (undelivered messages, bootstrap holds). The core asks once per
   * bound; when a clamp held some of it back, the tick asks again ({@link #tick}) until the clamp
   * has moved, or the log would keep what the core no longer needs until the stable vector next
   * moves (never, between DCs that stopped writing). Only once every record emitted before it is
   * durable (the core's contract); a failed record skips the truncation (the next one comes with
   * the next record). Under this object's monitor.
   */
  private void truncateAsFarAsAllowed() {
    DependencyVector wanted = truncationWanted;
    truncationIssuedAtMillis = System.currentTimeMillis();
    lastRecord.thenCompose(ignored -> onStorageThread(() -> {
          // The clamps are taken here, on the storage thread, when the truncation runs: a hold
          // taken since it was asked for is seen (holdTruncation).
          DependencyVector allowed = boundedByHolds(boundedByDelivery(wanted));
          truncationIssued = truncationIssued.merge(allowed);
          return replicationLog.truncate(allowed);
        }))
        .whenComplete((ignored, failure) -> {
          if (failure != null) {
            log.warn("replication: truncating the log failed: {}", failure.toString());
          }
        });
  }

  /** A tick: the core's, and a truncation a clamp held back, once it may go further. */
  private void tick() {
    feed(new Input.Tick(), null);
    synchronized (this) {
      if (closed || truncationIssued.covers(truncationWanted)
          || System.currentTimeMillis() - truncationIssuedAtMillis
              < settings.truncateIntervalMillis()) {
        return;
      }
      if (!truncationIssued.covers(boundedByHolds(boundedByDelivery(truncationWanted)))) {
        truncateAsFarAsAllowed();
      }
    }
  }

  /**
   * Runs a replication log write (a synced RocksDB write in the caller's thread) on the shell's
   * storage thread, in submission order, so the monitor is never held across a sync and no
   * actor or writer thread that happened to drain the queue blocks on one.
   */
  private CompletableFuture<Void> onStorageThread(
      Supplier<CompletableFuture<Void>> write) {
    try {
      return CompletableFuture.supplyAsync(write, storageThread).thenCompose(future -> future);
    } catch (RejectedExecutionException closing) {
      return CompletableFuture.failedFuture(
          new TroupeException(ErrorCode.UNAVAILABLE, "replication is closed"));
    }
  }

  /**
   * Applies one run of an origin's transactions atomically (never blocks: completions are fed
   * back): per entity one {@link Turn.ApplyReplicated} holding a segment of every transaction of
   * the run that touches it, in the origin's order.
   */
  private void apply(Effect.Apply apply) {
    RemoteApplication application = apply.application();
    int origin = application.originDc();
    Map<EntityId, Turn.ApplyReplicated> turns = new LinkedHashMap<>();
    application.segmentsByEntity().forEach((entity, segments) -> {
      List<Turn.ApplyReplicated.Segment> converted = new ArrayList<>(segments.size());
      for (RemoteApplication.Segment segment : segments) {
        converted.add(new Turn.ApplyReplicated.Segment(segment.transactionTimestamp(),
            segment.part().stampTimestamp(), segment.part().operations()));
      }
      turns.put(entity, new Turn.ApplyReplicated(origin, converted));
    });
    troupe.observeTimestamp(application.lastTimestamp());
    CompletableFuture<?> applied;
    if (turns.size() == 1) {
      Map.Entry<EntityId, Turn.ApplyReplicated> only = turns.entrySet().iterator().next();
      applied = troupe.applyReplicated(only.getKey(), only.getValue());
    } else {
      applied = troupe.applyReplicated(turns);
    }
    applied.whenComplete((ignored, failure) -> {
      if (failure == null) {
        feed(new Input.Applied(application), null);
      } else {
        String reason = DurableStore.failureOf(failure).getMessage();
        log.debug("replication: applying {} transactions of DC {} from {} failed ({}); retried",
            application.transactions().size(), origin, application.firstTransactionTimestamp(),
            reason);
        feed(new Input.ApplicationFailed(application, reason), null);
      }
    });
  }

  private void wakeWaiters() {
    List<Waiter> ready = new ArrayList<>();
    synchronized (waiters) {
      for (Iterator<Waiter> it = waiters.iterator(); it.hasNext(); ) {
        Waiter waiter = it.next();
        if (isVisible(waiter.token())) {
          it.remove();
          ready.add(waiter);
        }
      }
    }
    ready.forEach(waiter -> waiter.visible().complete(true));
  }

  /**
   * Stops ticking and feeding the core, waits for the applied vector's record in flight, and
   * answers every waiting {@link #whenVisible} with false. Nothing more is recorded: only the
   * core knows which applied vector is safe to restart from (one that cuts no applied
   * multi-entity transaction between its decision and its parts), and a restart re-feeds the rest
   * idempotently. Applications in flight finish in the engine; their completions are ignored.
   * Close before the engine.
   */
  /**
   * {@code below} with this DC's and every peer's entry lowered to its recorded delivered
   * watermark: an entry every peer received (or this DC applied) may still hold a causal message
   * not yet delivered here (docs/ARCHITECTURE.md, "Causal messages").
   */
  private DependencyVector boundedByDelivery(DependencyVector below) {
    DependencyVector delivered = replicationLog.deliveredVector();
    // The peers now, runtime additions included (not only the configured ones).
    Set<Integer> peers = new TreeSet<>();
    for (String name : peerNames) {
      peers.add(DataCentreIds.of(name));
    }
    java.util.TreeMap<Integer, Long> bounded = new java.util.TreeMap<>(below.entries());
    bounded.replaceAll((origin, entry) -> origin == dataCentreId
        || peers.contains(origin) ? Math.min(entry, delivered.get(origin)) : entry);
    return new DependencyVector(bounded);
  }

  @Override
  public void close() {
    CompletableFuture<Void> record;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      ticks.cancel();
      record = lastRecord;
    }
    try {
      record.get();
    } catch (Exception e) {
      log.warn("replication: the applied vector's last record failed: {}", e.toString());
    }
    // Writes already submitted finish (the engine closes the store after this).
    storageThread.shutdown();
    try {
      if (!storageThread.awaitTermination(30, TimeUnit.SECONDS)) {
        log.warn("replication: the log's writes did not finish within 30 s of close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<Waiter> waiting;
    synchronized (waiters) {
      waiting = List.copyOf(waiters);
      waiters.clear();
    }
    waiting.forEach(waiter -> waiter.visible().complete(false));
  }
}
