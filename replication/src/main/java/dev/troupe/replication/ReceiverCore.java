package dev.troupe.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.ReplicationMutations.Mutation;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Causal application of other data centres' transactions in one DC: which received remote
 * transaction may be applied when, and what the DC's received, applied, applying and stable
 * vectors are. A deterministic state machine, one per DC: the shell ({@code runtime}'s {@code
 * ReplicationShell}, or the simulator) feeds {@link Input}s with the time and performs the {@link
 * Effect}s in the order given; storage, pulls and application happen outside.
 *
 * <p><b>What is received.</b> A peer's pull answer ({@link ReplicationBatch}) is persisted first
 * ({@link Effect.PersistBatch}, then {@link Input.BatchPersisted}); only durable entries are
 * considered, and an origin's <i>received</i> entry is the bound below which every one of its
 * entries is durable here (the batch's {@code upToTimestamp}: an empty batch with a higher bound
 * is a heartbeat). Entries at or below the received entry are duplicates and dropped, so
 * overlapping and repeated batches, from the origin or forwarded by another peer, are harmless.
 *
 * <p><b>Grouping.</b> Per origin, entries become {@link RemoteTransaction}s in log order: a
 * decision opens a multi-entity transaction that is complete once a part of every participant it
 * names arrived (parts with its transaction id; so a decision must name exactly the participants
 * that commit a part, never one that only read); parts with no decision are the transaction of one
 * journal record, complete on arrival (a batch never splits a timestamp). A transaction's place is
 * the timestamp of its first entry; its dependencies are the merge of its entries'.
 *
 * <p><b>When a transaction is applied</b> ({@link Effect.ApplyTransaction}): it is complete; the
 * applied vector covers its dependencies except the origin's own entry (implied by the origin's
 * order) and this DC's (its own transactions are visible here once committed); and every earlier
 * transaction of its origin is applied: one transaction per origin is in flight at a time (two
 * of one origin on different entities could become visible out of order — the simulator found it,
 * {@link ReplicationMutations.Mutation#PIPELINE_WITHIN_ORIGIN}); transactions of different origins
 * may be in flight together, at most {@code maxApplyingTransactions} in this DC and never two on
 * one entity. A multi-entity transaction is applied alone and atomically (one effect, all its
 * parts). Before the first {@code ApplyTransaction} that needs it,
 * the applying vector is raised to the transaction's timestamp ({@link
 * Effect.PublishApplyingVector}): the shell publishes it to the store before it runs the
 * application, so every local transaction that could see the remote one records it among its
 * dependencies (as in Cure, a transaction depends on every remote transaction visible where it
 * ran). Application is idempotent (the entity's {@code $replicated:<origin>}
 * marker), so a failed one is emitted again after {@code retryDelayMillis} and a crash re-feeds
 * whatever may not have been applied.
 *
 * <p><b>Applied vector.</b> An origin's entry is the largest timestamp T at or below its received
 * entry such that every transaction of the origin whose first entry is at or below T is applied.
 * It never exceeds what is applied; with nothing pending it is the received entry, so heartbeats
 * advance an idle origin. A remote transaction waits for this vector, so whatever another DC saw
 * of an origin (its applying vector, hence its dependencies) is applied here first.
 *
 * <p><b>Recovery.</b> What is recorded durably ({@link Effect.RecordAppliedVector}, throttled by
 * {@code appliedRecordIntervalMillis}) is the applied vector lowered, where needed, to the first
 * entry of any applied multi-entity transaction it would cut through (its decision below, parts
 * above): the shell re-feeds the log's entries above the recorded vector at start ({@link
 * Input.RecoveredEntries}), and a part re-fed without its decision would otherwise be applied as a
 * transaction of its own. Re-fed transactions that were applied are applied again as no-ops. At
 * recovery the applying vector is raised over every complete re-fed transaction, since any of them
 * may have been visible before the crash.
 *
 * <p><b>Stable vector and truncation.</b> Peers report their received vectors (with each pull,
 * {@link Input.PeerReported}). The stable vector's entry for DC d is the minimum, over every
 * configured DC other than d (this one included, with its own received vector; a DC that never
 * reported counts as 0), of its received entry for d: every DC holds d's entries up to it, so no
 * one will ask for them again (ttcc.txt's globally stable snapshot, {@code vv_GSS = min(kvv[i])},
 * over received rather than applied vectors). The log is truncated ({@link Effect.Truncate}, throttled by {@code
 * truncateIntervalMillis}) below the stable vector met with the last recorded applied vector (this
 * DC's own entries: below the stable entry), so neither a peer's pull nor this DC's recovery ever
 * needs a truncated entry. The shell performs a {@code Truncate} only after every {@code
 * RecordAppliedVector} emitted before it is durable.
 *
 * <p><b>Pulls.</b> {@link #pullsFrom} plans what to ask a peer: its own entries always; another
 * origin's only while that origin's received entry has not advanced for {@code
 * forwardAfterMillis} or its link failed ({@link Input.LinkFailed}), and only from the one live
 * peer that reported the most of it beyond this DC's received entry (transitive forwarding, so a
 * DC cut off from an origin still receives its transactions through the others).
 *
 * <p><b>Peers change at runtime</b> ({@link Input.PeersChanged}: a DC added to or removed from
 * a running set). A new peer is a new origin whose received and applied entries start at 0 and a
 * holder that never reported, so every entry of the stable vector is 0 until it reports: the log
 * is not truncated past anything the newcomer may still ask for (truncation stalls, never prunes
 * what it needs). A removed peer is no longer pulled from, forwarded through, or counted in the
 * stable vector (so it stops holding truncation back), and its origin is forgotten: what of it
 * was received and not applied is dropped, and a transaction of another DC that depended on it
 * no longer waits for it. So a DC is removed once it stopped taking writes and every DC applied
 * what it wrote (docs/OPERATIONS.md); re-adding it later starts its origin from 0 again (already
 * applied transactions are no-ops by their markers).
 *
 * <p>Not thread-safe: one shell thread (or actor) feeds it. Deterministic: iteration orders are
 * by DC id and log order.
 */
public final class ReceiverCore {

  /** What the shell feeds the core. */
  public sealed interface Input {
    /** A peer answered a pull with {@code batch} (not yet durable here). */
    record BatchReceived(int peerDc, ReplicationBatch batch) implements Input {}

    /** The batch of an earlier {@link Effect.PersistBatch} is durable in the log. */
    record BatchPersisted(int peerDc, ReplicationBatch batch) implements Input {}

    /**
     * At start, before any other input: the durable received and applied vectors and the log's
     * entries of remote origins above the applied vector, in log order per origin. A new DC feeds
     * empty vectors and no entries. Its first effect publishes the applying vector: the shell
     * makes it the store's before any local transaction commits.
     */
    record RecoveredEntries(DependencyVector receivedVector, DependencyVector appliedVector,
        List<ReplicationEntry> entries) implements Input {
      public RecoveredEntries {
        entries = List.copyOf(entries);
      }
    }

    /** The transaction of an earlier {@link Effect.ApplyTransaction} is applied (durably). */
    record TransactionApplied(RemoteTransaction transaction) implements Input {}

    /** The application failed (an environmental failure); it is emitted again later. */
    record ApplicationFailed(RemoteTransaction transaction, String reason) implements Input {}

    /** A peer's received vector, as it reported with its latest pull. */
    record PeerReported(int peerDc, DependencyVector receivedVector) implements Input {}

    /** A pull from {@code peerDc} failed (unreachable, refused, timed out). */
    record LinkFailed(int peerDc) implements Input {}

    /** Time passed: retries, throttled records and truncations become due. */
    record Tick() implements Input {}

    /**
     * The set of peers changed at runtime (a DC added or removed): {@code dataCentres} is every
     * peer from now on (this DC is ignored if listed).
     */
    record PeersChanged(Set<Integer> dataCentres) implements Input {
      public PeersChanged {
        dataCentres = Set.copyOf(dataCentres);
      }
    }
  }

  /** What the shell performs, in the order given. */
  public sealed interface Effect {
    /** Append {@code batch} (only its entries new here) durably, then feed BatchPersisted. */
    record PersistBatch(int peerDc, ReplicationBatch batch) implements Effect {}

    /** Make {@code applying} the store's applying vector before running any later effect. */
    record PublishApplyingVector(DependencyVector applying) implements Effect {}

    /** Apply the transaction (atomically), then feed TransactionApplied or ApplicationFailed. */
    record ApplyTransaction(RemoteTransaction transaction) implements Effect {}

    /** Record {@code applied} durably (the store's applied vector, read back at start). */
    record RecordAppliedVector(DependencyVector applied) implements Effect {}

    /** Remove the log's entries of each origin at or below {@code below}'s entry for it. */
    record Truncate(DependencyVector below) implements Effect {}

    /** A batch that cannot be taken (an origin not configured here, or this DC's own). */
    record BatchRefused(int peerDc, int originDc, String reason) implements Effect {}
  }

  private static final long NEVER = Long.MIN_VALUE;

  private final int dataCentreId;
  /** The current peers; changed only by {@link Input.PeersChanged}. */
  private final TreeSet<Integer> peers = new TreeSet<>();
  private final ReceiverLimits limits;
  private final Set<Mutation> mutations;
  private final TreeMap<Integer, Origin> origins = new TreeMap<>();
  private final TreeMap<Integer, DependencyVector> reported = new TreeMap<>();
  private final Set<EntityId> entitiesInFlight = new HashSet<>();
  private final List<Pending> retries = new ArrayList<>();
  /** Applications in flight of origins removed since they were emitted (see changePeers). */
  private final List<Pending> orphans = new ArrayList<>();
  private int transactionsInFlight;
  private int rotation;
  private boolean started;
  private DependencyVector applying = DependencyVector.EMPTY;
  private DependencyVector recordedApplied = DependencyVector.EMPTY;
  private long recordedAtMillis = NEVER;
  private DependencyVector truncatedBelow = DependencyVector.EMPTY;
  private long truncatedAtMillis = NEVER;

  /**
   * @param dataCentreId this DC's id
   * @param peerDcs every other configured DC (this one is ignored if listed)
   */
  public ReceiverCore(int dataCentreId, Collection<Integer> peerDcs, ReceiverLimits limits) {
    this(dataCentreId, peerDcs, limits, Set.of());
  }

  /** A core with deliberate breakages, for the simulator's tests only ({@link ReplicationMutations}). */
  public ReceiverCore(int dataCentreId, Collection<Integer> peerDcs, ReceiverLimits limits,
      Set<Mutation> mutations) {
    Invariants.check(dataCentreId != 0, "replication needs a named data centre");
    this.dataCentreId = dataCentreId;
    this.peers.addAll(peerDcs);
    this.peers.remove(dataCentreId);
    this.limits = limits;
    this.mutations = mutations.isEmpty() ? Set.of() : EnumSet.copyOf(mutations);
    for (int peer : peers) {
      origins.put(peer, new Origin(peer));
    }
  }

  // ---------------------------------------------------------------- queries

  public int dataCentreId() {
    return dataCentreId;
  }

  /** The current peers (a snapshot). */
  public SortedSet<Integer> peers() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(peers));
  }

  /** Per remote origin, the bound below which all its entries are durable here. */
  public DependencyVector receivedVector() {
    TreeMap<Integer, Long> entries = new TreeMap<>();
    origins.forEach((dc, origin) -> entries.put(dc, origin.received));
    return new DependencyVector(entries);
  }

  /** Per remote origin, the bound below which all its transactions are applied here. */
  public DependencyVector appliedVector() {
    TreeMap<Integer, Long> entries = new TreeMap<>();
    origins.forEach((dc, origin) -> entries.put(dc, origin.applied));
    return new DependencyVector(entries);
  }

  /** The applying vector last published (covers every transaction emitted for application). */
  public DependencyVector applyingVector() {
    return applying;
  }

  /**
   * Per configured DC d (this one included), the minimum over every other configured DC of its
   * received entry for d: every DC holds d's entries up to there.
   */
  public DependencyVector stableVector() {
    TreeMap<Integer, Long> entries = new TreeMap<>();
    TreeSet<Integer> all = new TreeSet<>(peers);
    all.add(dataCentreId);
    if (peers.isEmpty()) {
      return DependencyVector.EMPTY;
    }
    DependencyVector mine = receivedVector();
    for (int d : all) {
      long stable = Long.MAX_VALUE;
      for (int holder : all) {
        if (holder != d) {
          DependencyVector vector = holder == dataCentreId ? mine
              : reported.getOrDefault(holder, DependencyVector.EMPTY);
          stable = Math.min(stable, vector.get(d));
        }
      }
      entries.put(d, stable);
    }
    return new DependencyVector(entries);
  }

  /** Transactions of {@code originDc} received (or partly received) and not yet applied. */
  public int pendingTransactions(int originDc) {
    Origin origin = origins.get(originDc);
    return origin == null ? 0 : origin.pending.size();
  }

  /** Transactions of every origin received and not yet applied. */
  public int pendingTransactions() {
    int total = 0;
    for (Origin origin : origins.values()) {
      total += origin.pending.size();
    }
    return total;
  }

  /** Transactions emitted for application and not yet reported applied. */
  public int transactionsInFlight() {
    return transactionsInFlight;
  }

  /**
   * When {@code originDc}'s received entry last advanced (or when this core first ran), for its
   * lag in milliseconds; {@link Long#MIN_VALUE} before the first input.
   */
  public long lastAdvanceMillis(int originDc) {
    Origin origin = origins.get(originDc);
    return origin == null ? NEVER : origin.lastAdvanceMillis;
  }

  /**
   * What to ask {@code peerDc} for now: its own entries after this DC's received entry, and the
   * entries of every origin whose forwarding is due and for which {@code peerDc} is the chosen
   * forwarder (the live peer that reported the most of that origin beyond this DC's received
   * entry, the lowest id on a tie). Empty for a DC that is not a peer.
   */
  public List<PullRequest> pullsFrom(int peerDc, long nowMillis) {
    if (!peers.contains(peerDc)) {
      return List.of();
    }
    List<PullRequest> pulls = new ArrayList<>();
    pulls.add(new PullRequest(peerDc, origins.get(peerDc).received));
    for (Origin origin : origins.values()) {
      if (origin.dc != peerDc && forwardingDue(origin, nowMillis)
          && forwarderOf(origin) == peerDc) {
        pulls.add(new PullRequest(origin.dc, origin.received));
      }
    }
    return pulls;
  }

  private boolean forwardingDue(Origin origin, long nowMillis) {
    return origin.linkFailed || (origin.lastAdvanceMillis != NEVER
        && nowMillis - origin.lastAdvanceMillis >= limits.forwardAfterMillis());
  }

  /** The peer to pull {@code origin}'s entries from instead of itself; 0 when none has more. */
  private int forwarderOf(Origin origin) {
    int best = 0;
    long bestReceived = origin.received;
    for (int peer : peers) {
      if (peer == origin.dc || origins.get(peer).linkFailed) {
        continue;
      }
      long theirs = reported.getOrDefault(peer, DependencyVector.EMPTY).get(origin.dc);
      if (theirs > bestReceived) {
        best = peer;
        bestReceived = theirs;
      }
    }
    return best;
  }

  // ---------------------------------------------------------------- inputs

  /** Feeds one input at {@code nowMillis}; answers the effects to perform, in order. */
  public List<Effect> handle(Input input, long nowMillis) {
    List<Effect> effects = new ArrayList<>();
    if (input instanceof Input.RecoveredEntries recovered) {
      Invariants.check(!started, "recovered entries after the replication receiver started");
      started = true;
      startClocks(nowMillis);
      recover(recovered, effects);
    } else {
      started = true;
      startClocks(nowMillis);
      switch (input) {
        case Input.BatchReceived received -> receive(received, effects);
        case Input.BatchPersisted persisted -> persisted(persisted, nowMillis);
        case Input.TransactionApplied applied -> applied(applied.transaction());
        case Input.ApplicationFailed failed -> failed(failed.transaction(), nowMillis);
        case Input.PeerReported report -> {
          if (peers.contains(report.peerDc())) {
            reported.merge(report.peerDc(), report.receivedVector(), DependencyVector::merge);
          }
        }
        case Input.LinkFailed failed -> {
          Origin origin = origins.get(failed.peerDc());
          if (origin != null) {
            origin.linkFailed = true;
          }
        }
        case Input.Tick ignored -> { }
        case Input.PeersChanged changed -> changePeers(changed.dataCentres(), nowMillis);
        case Input.RecoveredEntries ignored -> throw new IllegalStateException("handled above");
      }
    }
    retryDue(nowMillis, effects);
    emitApplicable(effects);
    recordAndTruncate(nowMillis, effects);
    return effects;
  }

  /** See the class comment's "Peers change at runtime". */
  private void changePeers(Set<Integer> dataCentres, long nowMillis) {
    TreeSet<Integer> next = new TreeSet<>(dataCentres);
    next.remove(dataCentreId);
    for (int removed : new ArrayList<>(peers)) {
      if (!next.contains(removed)) {
        peers.remove(removed);
        reported.remove(removed);
        Origin origin = origins.remove(removed);
        for (Pending pending : origin.pending.values()) {
          retries.remove(pending);
          if (pending.inFlight) {
            // It keeps its entities and its slot until its application completes: two
            // applications on one entity never run together, whatever their origins.
            orphans.add(pending);
          }
        }
      }
    }
    for (int added : next) {
      if (peers.add(added)) {
        Origin origin = new Origin(added);
        origin.lastAdvanceMillis = nowMillis;
        origins.put(added, origin);
      }
    }
  }

  private void startClocks(long nowMillis) {
    for (Origin origin : origins.values()) {
      if (origin.lastAdvanceMillis == NEVER) {
        origin.lastAdvanceMillis = nowMillis;
      }
    }
  }

  private void recover(Input.RecoveredEntries recovered, List<Effect> effects) {
    for (Origin origin : origins.values()) {
      origin.received = recovered.receivedVector().get(origin.dc);
      origin.applied = recovered.appliedVector().get(origin.dc);
      Invariants.check(origin.applied <= origin.received,
          "recovered applied entry %s of DC %s above its received entry %s", origin.applied,
          origin.dc, origin.received);
    }
    recordedApplied = appliedVector();
    for (ReplicationEntry entry : recovered.entries()) {
      Origin origin = origins.get(entry.originDc());
      if (origin != null && entry.timestamp() > origin.applied
          && entry.timestamp() <= origin.received) {
        origin.add(entry);
      }
    }
    // Any complete re-fed transaction may have been applied (and seen) before the crash.
    DependencyVector raised = applying.merge(appliedVector());
    for (Origin origin : origins.values()) {
      for (Pending pending : origin.pending.values()) {
        if (pending.complete()) {
          raised = raised.atLeast(origin.dc, pending.key.timestamp());
        }
      }
      origin.advanceApplied();
    }
    applying = raised;
    effects.add(new Effect.PublishApplyingVector(applying));
  }

  private void receive(Input.BatchReceived received, List<Effect> effects) {
    ReplicationBatch batch = received.batch();
    Origin origin = origins.get(batch.originDc());
    if (origin == null) {
      effects.add(new Effect.BatchRefused(received.peerDc(), batch.originDc(),
          batch.originDc() == dataCentreId ? "this data centre's own entries"
              : "data centre " + batch.originDc() + " is not configured here"));
      return;
    }
    if (received.peerDc() == origin.dc) {
      origin.linkFailed = false;
    }
    List<ReplicationEntry> fresh = new ArrayList<>();
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() > origin.received) {
        fresh.add(entry);
      }
    }
    if (fresh.isEmpty() && batch.upToTimestamp() <= origin.received) {
      return;
    }
    effects.add(new Effect.PersistBatch(received.peerDc(),
        new ReplicationBatch(origin.dc, fresh, batch.upToTimestamp())));
  }

  private void persisted(Input.BatchPersisted persisted, long nowMillis) {
    ReplicationBatch batch = persisted.batch();
    Origin origin = origins.get(batch.originDc());
    if (origin == null) {
      return;
    }
    if (persisted.peerDc() == origin.dc) {
      origin.linkFailed = false;
    }
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() > origin.received) {
        origin.add(entry);
      }
    }
    if (batch.upToTimestamp() > origin.received) {
      origin.received = batch.upToTimestamp();
      origin.lastAdvanceMillis = nowMillis;
    }
    origin.advanceApplied();
  }

  private void applied(RemoteTransaction transaction) {
    Origin origin = origins.get(transaction.originDc());
    if (origin == null) {
      releaseOrphan(transaction);
      return;
    }
    Pending pending = origin.pending.get(key(transaction));
    if (pending == null || !pending.inFlight) {
      return; // a duplicate report
    }
    origin.pending.remove(pending.key);
    if (pending.participants != null) {
      origin.openDecisions.remove(pending.key.transactionId());
    }
    retries.remove(pending);
    release(origin, pending);
    RemoteTransaction applied = pending.transaction;
    if (applied.lastTimestamp() > applied.transactionTimestamp()) {
      origin.appliedSpans.put(pending.key, applied.lastTimestamp());
    }
    origin.advanceApplied();
  }

  private void failed(RemoteTransaction transaction, long nowMillis) {
    Origin origin = origins.get(transaction.originDc());
    if (origin == null) {
      releaseOrphan(transaction); // its origin was removed: not retried
      return;
    }
    Pending pending = origin.pending.get(key(transaction));
    if (pending == null || !pending.inFlight || pending.retryAtMillis != NEVER) {
      return;
    }
    pending.retryAtMillis = nowMillis + limits.retryDelayMillis();
    retries.add(pending);
  }

  /** Frees what an application of a removed origin held, once it completed. */
  private void releaseOrphan(RemoteTransaction transaction) {
    for (Pending orphan : orphans) {
      if (orphan.originDc == transaction.originDc() && orphan.key.equals(key(transaction))) {
        orphans.remove(orphan);
        entitiesInFlight.removeAll(orphan.parts.keySet());
        transactionsInFlight--;
        return;
      }
    }
  }

  private static Key key(RemoteTransaction transaction) {
    return new Key(transaction.transactionTimestamp(), transaction.transactionId());
  }

  // ---------------------------------------------------------------- application

  private void retryDue(long nowMillis, List<Effect> effects) {
    List<Pending> due = new ArrayList<>();
    for (Pending pending : retries) {
      if (pending.retryAtMillis <= nowMillis) {
        due.add(pending);
      }
    }
    due.sort(Comparator.comparing((Pending pending) -> pending.originDc)
        .thenComparing(pending -> pending.key));
    for (Pending pending : due) {
      retries.remove(pending);
      pending.retryAtMillis = NEVER;
      effects.add(new Effect.ApplyTransaction(pending.transaction));
    }
  }

  private void emitApplicable(List<Effect> effects) {
    List<Pending> emitted = new ArrayList<>();
    List<Origin> order = new ArrayList<>(origins.values());
    if (!order.isEmpty()) {
      // Rotate the starting origin so that no origin starves the others of in-flight slots.
      int start = Math.floorMod(rotation++, order.size());
      List<Origin> rotated = new ArrayList<>(order.subList(start, order.size()));
      rotated.addAll(order.subList(0, start));
      order = rotated;
    }
    boolean progress = true;
    while (progress && transactionsInFlight < limits.maxApplyingTransactions()) {
      progress = false;
      for (Origin origin : order) {
        if (transactionsInFlight >= limits.maxApplyingTransactions()) {
          break;
        }
        Pending next = nextApplicable(origin);
        if (next != null) {
          start(origin, next);
          emitted.add(next);
          progress = true;
        }
      }
    }
    if (emitted.isEmpty()) {
      return;
    }
    DependencyVector raised = applying;
    for (Pending pending : emitted) {
      raised = raised.atLeast(pending.originDc, pending.key.timestamp());
    }
    if (!raised.equals(applying)) {
      applying = raised;
      effects.add(new Effect.PublishApplyingVector(applying));
    }
    for (Pending pending : emitted) {
      effects.add(new Effect.ApplyTransaction(pending.transaction));
    }
  }

  /** The origin's next transaction to emit now, or null. */
  private Pending nextApplicable(Origin origin) {
    if (origin.multiEntityInFlight) {
      return null;
    }
    for (Pending pending : origin.pending.values()) {
      if (pending.inFlight) {
        continue;
      }
      if (!pending.complete() || !dependenciesApplied(origin.dc, pending.dependencies)) {
        return null;
      }
      for (EntityId entity : pending.parts.keySet()) {
        if (entitiesInFlight.contains(entity)) {
          return null;
        }
      }
      // One transaction of an origin at a time: the shell cannot make two applications on
      // different entities visible in the order they were emitted (an entity's commit becomes
      // readable when it is durable, whatever another entity is doing), and a reader that saw
      // the later one must see the earlier one. Origins still apply in parallel: two
      // transactions of different origins in flight together are causally independent, since
      // each waits for its dependencies to be applied, not merely in flight.
      if (origin.inFlight > 0 && (pending.isMultiEntity()
          || !mutations.contains(Mutation.PIPELINE_WITHIN_ORIGIN))) {
        return null;
      }
      return pending;
    }
    return null;
  }

  private boolean dependenciesApplied(int originDc, DependencyVector dependencies) {
    if (mutations.contains(Mutation.APPLY_BEFORE_DEPENDENCIES)) {
      return true;
    }
    for (Map.Entry<Integer, Long> entry : dependencies.entries().entrySet()) {
      int dc = entry.getKey();
      if (dc == originDc || dc == dataCentreId) {
        continue;
      }
      Origin other = origins.get(dc);
      // A DC not configured here sends nothing here: nothing of it can be missing.
      if (other != null && other.applied < entry.getValue()) {
        return false;
      }
    }
    return true;
  }

  private void start(Origin origin, Pending pending) {
    pending.inFlight = true;
    pending.transaction = pending.toTransaction();
    entitiesInFlight.addAll(pending.parts.keySet());
    origin.inFlight++;
    transactionsInFlight++;
    if (pending.isMultiEntity()) {
      origin.multiEntityInFlight = true;
    }
  }

  private void release(Origin origin, Pending pending) {
    entitiesInFlight.removeAll(pending.parts.keySet());
    origin.inFlight--;
    transactionsInFlight--;
    if (pending.isMultiEntity()) {
      origin.multiEntityInFlight = false;
    }
  }

  // ---------------------------------------------------------------- records and truncation

  private void recordAndTruncate(long nowMillis, List<Effect> effects) {
    if (!started) {
      return;
    }
    TreeMap<Integer, Long> floors = new TreeMap<>();
    for (Origin origin : origins.values()) {
      floors.put(origin.dc, origin.recoveryFloor());
    }
    DependencyVector floor = new DependencyVector(floors);
    if (!floor.equals(recordedApplied)
        && due(recordedAtMillis, limits.appliedRecordIntervalMillis(), nowMillis)) {
      recordedApplied = floor;
      recordedAtMillis = nowMillis;
      effects.add(new Effect.RecordAppliedVector(floor));
      for (Origin origin : origins.values()) {
        origin.forgetSpansBelow(floor.get(origin.dc));
      }
    }
    DependencyVector stable = stableVector();
    TreeMap<Integer, Long> below = new TreeMap<>();
    for (Origin origin : origins.values()) {
      long bound = recordedApplied.get(origin.dc);
      if (!mutations.contains(Mutation.TRUNCATE_BEFORE_STABLE)) {
        bound = Math.min(bound, stable.get(origin.dc));
      }
      below.put(origin.dc, bound);
    }
    below.put(dataCentreId, stable.get(dataCentreId));
    DependencyVector bound = new DependencyVector(below);
    if (!truncatedBelow.covers(bound)
        && due(truncatedAtMillis, limits.truncateIntervalMillis(), nowMillis)) {
      truncatedBelow = truncatedBelow.merge(bound);
      truncatedAtMillis = nowMillis;
      effects.add(new Effect.Truncate(bound));
    }
  }

  private static boolean due(long lastMillis, long intervalMillis, long nowMillis) {
    return lastMillis == NEVER || nowMillis - lastMillis >= intervalMillis;
  }

  // ---------------------------------------------------------------- state

  /** A transaction's place in its origin's order: its first entry's timestamp, then its id. */
  private record Key(long timestamp, long transactionId) implements Comparable<Key> {
    @Override
    public int compareTo(Key other) {
      int byTimestamp = Long.compare(timestamp, other.timestamp);
      return byTimestamp != 0 ? byTimestamp : Long.compare(transactionId, other.transactionId);
    }
  }

  /** What this DC knows of one remote origin. */
  private final class Origin {
    final int dc;
    long received;
    long applied;
    long lastAdvanceMillis = NEVER;
    boolean linkFailed;
    int inFlight;
    boolean multiEntityInFlight;
    /** Received transactions not yet applied (complete or not, in flight or not), in order. */
    final TreeMap<Key, Pending> pending = new TreeMap<>();
    /** Pending transactions opened by a decision, by transaction id (until applied). */
    final Map<Long, Pending> openDecisions = new LinkedHashMap<>();
    /** Applied transactions whose entries span several timestamps: first entry -> last. */
    final TreeMap<Key, Long> appliedSpans = new TreeMap<>();

    Origin(int dc) {
      this.dc = dc;
    }

    /** Takes one durable entry above the received entry (or re-fed at recovery). */
    void add(ReplicationEntry entry) {
      boolean split = mutations.contains(Mutation.SPLIT_MULTI_ENTITY_TRANSACTIONS);
      switch (entry) {
        case ReplicationEntry.Decision decision -> {
          if (split) {
            return;
          }
          Key key = new Key(decision.timestamp(), decision.transactionId());
          if (!pending.containsKey(key)) {
            Pending opened = new Pending(dc, key, Set.copyOf(decision.participants()));
            opened.dependencies = decision.dependencies();
            pending.put(key, opened);
            openDecisions.put(decision.transactionId(), opened);
          }
        }
        case ReplicationEntry.Part part -> {
          Pending owner = split ? null : openDecisions.get(part.transactionId());
          if (owner == null) {
            Key key = new Key(part.timestamp(), part.transactionId());
            owner = pending.computeIfAbsent(key, k -> new Pending(dc, k, null));
          }
          if (owner.inFlight || owner.parts.containsKey(part.entity())) {
            return; // a duplicate
          }
          owner.parts.put(part.entity(), part);
          owner.dependencies = owner.dependencies.merge(part.dependencies());
        }
      }
    }

    /** Raises the applied entry to the received entry, or to just below the first pending one. */
    void advanceApplied() {
      long next = pending.isEmpty() ? received
          : Math.min(received, pending.firstKey().timestamp() - 1);
      Invariants.check(next >= applied, "the applied entry of DC %s would fall from %s to %s",
          dc, applied, next);
      applied = next;
    }

    /**
     * The applied entry lowered below the first entry of every applied transaction it would cut
     * (first entry at or below it, last above): the clean point recovery can re-feed from.
     */
    long recoveryFloor() {
      long floor = applied;
      // Descending by first entry: once lowered below a span, no span checked before can cut it.
      for (Map.Entry<Key, Long> span : appliedSpans.descendingMap().entrySet()) {
        if (span.getKey().timestamp() <= floor && span.getValue() > floor) {
          floor = span.getKey().timestamp() - 1;
        }
      }
      return floor;
    }

    /** Spans wholly at or below a recorded floor can never cut a later one. */
    void forgetSpansBelow(long floor) {
      appliedSpans.values().removeIf(last -> last <= floor);
    }
  }

  /** One received transaction not yet applied. */
  private static final class Pending {
    final int originDc;
    final Key key;
    /** The participants its decision names; null for the parts of one journal record. */
    final Set<EntityId> participants;
    final Map<EntityId, ReplicationEntry.Part> parts = new LinkedHashMap<>();
    DependencyVector dependencies = DependencyVector.EMPTY;
    boolean inFlight;
    long retryAtMillis = NEVER;
    RemoteTransaction transaction;

    Pending(int originDc, Key key, Set<EntityId> participants) {
      this.originDc = originDc;
      this.key = key;
      this.participants = participants;
    }

    boolean complete() {
      return participants == null ? !parts.isEmpty() : parts.keySet().containsAll(participants);
    }

    boolean isMultiEntity() {
      return parts.size() > 1;
    }

    RemoteTransaction toTransaction() {
      List<ReplicationEntry.Part> ordered = new ArrayList<>(parts.values());
      ordered.sort(Comparator.comparingLong(ReplicationEntry.Part::timestamp)
          .thenComparingInt(ReplicationEntry.Part::index));
      List<RemoteTransaction.Part> converted = new ArrayList<>();
      for (ReplicationEntry.Part part : ordered) {
        converted.add(new RemoteTransaction.Part(part.entity(), part.timestamp(),
            part.operations()));
      }
      return new RemoteTransaction(originDc, key.timestamp(), key.transactionId(), dependencies,
          converted);
    }
  }
}
