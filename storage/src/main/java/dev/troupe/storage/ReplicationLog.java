package dev.troupe.storage;

import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The store's replication log ({@link Store#replicationLog()}): what a data centre (DC) ships to
 * the others, and what it received from them, in one ordered column of the store keyed by {@code
 * (originDc, timestamp, transactionId, index)}.
 *
 * <p><b>Local entries.</b> With {@link StorageSettings#replicationLog} on (whatever the DC id: an
 * unnamed DC, id 0, logs its own commits for its causal messages),
 * every local commit writes one {@link ReplicationEntry.Part} per entity in the same write batch as
 * its journal record (so a crash keeps both or neither), at the record's commit timestamp, and
 * every commit decision of a local multi-entity transaction writes a {@link
 * ReplicationEntry.Decision} at a timestamp ticked in its own batch (below every part's). Commits
 * that apply a remote transaction ({@link dev.troupe.model.causal.ReplicaApplication}) and their
 * decisions ({@link DecidedTransaction#replicaApplication}) write nothing: they are in the log
 * under their origin already.
 *
 * <p><b>Remote entries</b> arrive through {@link #appendReceived}, durably, with the origin's
 * received entry raised in the same write.
 *
 * <p>One log per store, so per node: a DC of several nodes has as many local logs, each with its
 * own safe timestamp (merging them is not built).
 *
 * <p>Thread-safe.
 */
public interface ReplicationLog {

  /**
   * Where each local entry takes its {@code dependencies} from: the DC's applying vector, read by
   * the writer when it writes the entry's batch. {@link DependencyVector#EMPTY} until set.
   */
  void setApplyingVectorSource(Supplier<DependencyVector> source);

  /**
   * Entries of {@code originDc} with a timestamp above {@code afterTimestamp}, in key order: at
   * most {@code maxEntries} of them, except that the entries of one timestamp are never split
   * across batches (a first timestamp with more entries than that comes whole). Its {@code
   * upToTimestamp}: for the local origin the {@link #localSafeTimestamp()} (local entries above it
   * are not returned), for a remote origin its received entry; when the batch was cut by {@code
   * maxEntries}, the last timestamp returned. So every entry of the origin with a timestamp in
   * {@code (afterTimestamp, upToTimestamp]} is in the batch. Reading the local origin of a failed
   * store fails with {@code unavailable}: the outcome of its last batch is unknown. A read after
   * a timestamp below {@link #truncatedVector()}'s entry for the origin fails with {@link
   * dev.troupe.model.causal.ReplicationLogTruncatedException} ({@code truncated}): entries it
   * should carry may be gone, and a batch without them would be a silent gap.
   */
  ReplicationBatch read(int originDc, long afterTimestamp, int maxEntries);

  /**
   * Appends entries a peer sent ({@code originDc}'s, never this DC's own) and raises the received
   * entry of {@code originDc} to at least {@code upToTimestamp}, in one synced write. Idempotent:
   * an entry is stored under its key, so receiving it again changes nothing. The synced write runs
   * on the calling thread (an fsync: milliseconds), and the future is complete on return; a caller
   * on a shared dispatcher hands the call to a thread that may block. Fails with {@code
   * unavailable} when the store is closed or failed or the write fails.
   */
  CompletableFuture<Void> appendReceived(int originDc, List<ReplicationEntry> entries,
      long upToTimestamp);

  /**
   * For each remote origin, the timestamp up to which its entries are durably here (as raised by
   * {@link #appendReceived}); this DC's own entry is {@link #localSafeTimestamp()}.
   */
  DependencyVector receivedVector();

  /**
   * Records the DC's applied vector (replacing the last one whole), synced on the calling thread
   * as {@link #appendReceived}; complete on return.
   */
  CompletableFuture<Void> recordApplied(DependencyVector applied);

  /** The applied vector as last recorded (read at open; empty if never recorded). */
  DependencyVector appliedVector();

  /**
   * Records the delivered watermark of causal messages (docs/ARCHITECTURE.md, "Causal
   * messages"): every message of the local log at or below it is delivered. Synced on the calling
   * thread, complete on return; a watermark at or below the recorded one changes nothing. Local
   * entries are truncated only at or below it (the caller's duty: {@code truncate} does not
   * check it).
   */
  CompletableFuture<Void> recordDelivered(long watermark);

  /** The delivered watermark as last recorded (read at open; 0 if never recorded). */
  long deliveredWatermark();

  /**
   * Records the delivered watermark of another origin's causal messages: every message of its log
   * at or below it that this DC delivers (to receivers of strong types homed here) is delivered.
   * Synced on the calling thread, complete on return; a watermark at or below the recorded one
   * changes nothing. That origin's entries are truncated only at or below it (the caller's duty).
   * For this DC's own origin it is {@link #recordDelivered(long)}.
   */
  CompletableFuture<Void> recordDelivered(int originDc, long watermark);

  /**
   * Every origin's delivered watermark as last recorded (read at open), this DC's own included
   * ({@link #deliveredWatermark()}); an origin never recorded is absent (0).
   */
  DependencyVector deliveredVector();

  /**
   * A timestamp such that every local entry at or below it is durably in the log already, and
   * every local entry written later has a timestamp above it. Never decreases.
   */
  long localSafeTimestamp();

  /**
   * The start of the local log a bootstrap image may send its new DC to (docs/ARCHITECTURE.md,
   * "Bootstrapping a new data centre"): {@link #localSafeTimestamp} taken first, lowered below the
   * transaction id of the oldest commit decision the store still remembers (one whose
   * participants have not all committed their parts). A decision is logged at a tick above its
   * transaction id, so no local multi-entity transaction is cut between a decision at or below the
   * result and a part committed after this call: a decision forgotten by then had every part
   * committed already, so the entity states read afterwards contain them.
   */
  long localImageStart();

  /**
   * Deletes, per origin named in {@code below}, the entries with a timestamp at or below its entry
   * (origins absent from the vector keep everything), except that local entries above the lowest
   * pinned snapshot ({@link Store#pinSnapshot}) are kept: the system-of-record exporter pins its
   * watermark and reads the decisions above it. Not synced: entries that come back after a crash
   * are deleted by the next truncation.
   */
  CompletableFuture<Void> truncate(DependencyVector below);

  /**
   * Per origin, the highest timestamp of an entry {@link #truncate} deleted (durable with the
   * deletion, read at open; origins never truncated are absent). Entries of the origin above it
   * are all still here; a read after a lower timestamp is refused (see {@link #read}).
   */
  DependencyVector truncatedVector();

  /**
   * Records the peers added at runtime (replacing the last list whole), synced on the calling
   * thread as {@link #appendReceived}; complete on return. A restart reads them back ({@link
   * #peers}) and the server merges them with the configured ones.
   */
  CompletableFuture<Void> recordPeers(List<ReplicationPeer> peers);

  /** The peers added at runtime as last recorded (read at open; empty if never recorded). */
  List<ReplicationPeer> peers();

  /**
   * The number of entries in the log (a metric): kept by every entry written, received or
   * truncated and persisted with them, so it is exact across restarts and crashes and costs no
   * scan at open; read while writes go on, it may be a moment old.
   */
  long entryCount();
}
