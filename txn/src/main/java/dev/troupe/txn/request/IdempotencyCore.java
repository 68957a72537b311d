package dev.troupe.txn.request;

import dev.troupe.model.Invariants;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Decides what a write carrying an {@code Idempotency-Key} does: run, replay the first attempt's
 * answer, or be refused. Pure: no storage, no threads, no clock (time is passed in).
 *
 * <p>A key's identity is {@link #qualifiedKey}: a namespace (the name of the client's token, empty
 * without tokens) and the key. A request's {@code fingerprint} is a hash of its method, path and
 * body; the same key with another fingerprint is a different request.
 *
 * <p>Bound: at most {@code maxKeys} keys are remembered or in progress. A new key beyond evicts
 * the oldest remembered one ({@link #takeEvicted}: the shell deletes its record as it deletes an
 * expired one), so the effective retention shrinks below {@code retentionMillis} when keyed writes
 * outpace {@code maxKeys / retentionMillis}; the alternative, refusing new keys until old ones
 * expire, would refuse every keyed write of a busy client for up to the whole window. Only when
 * every remembered key is in progress is a new key refused ({@link Decision.Full}).
 *
 * <p>Invariants: a key is in progress at most once; every remembered key has a single expiry
 * entry that counts ({@link #remembered} equals the number of keys with a live entry), and
 * {@link #remembered} never exceeds {@code maxKeys} through {@link #decide} (start-up may find
 * more, which then only drain).
 *
 * <p>Concurrency: not thread-safe; its shell calls it under one lock.
 *
 * <p>Recovery: nothing of it is durable. The durable record of a key is the storage's (written in
 * the same atomic write as the write itself), which the shell passes to {@link #decide}; at start
 * the shell {@link #remember}s every stored record, so the count and expiry order survive a
 * restart.
 */
public final class IdempotencyCore {
  /** Longest key, in characters (each visible ASCII, 0x21 to 0x7E). */
  public static final int MAX_KEY_LENGTH = 255;

  private final long retentionMillis;
  private final int maxKeys;
  /** Keys whose first attempt is running: their fingerprint. */
  private final Map<String, byte[]> inProgress = new HashMap<>();
  /**
   * Keys pruned whose deletion from storage is not yet done: a new attempt now could write its
   * record before the deletion and lose it, so it waits ({@link Decision.InProgress}).
   */
  private final java.util.Set<String> forgetting = new java.util.HashSet<>();
  /** Remembered keys: their recording time (the one live expiry entry). */
  private final Map<String, Long> recordedAt = new HashMap<>();
  /** Expiry entries in recording order; stale ones (a key recorded again) are skipped. */
  private final ArrayDeque<Entry> expiryOrder = new ArrayDeque<>();

  private record Entry(String qualifiedKey, long recordedAtMillis) {}

  /** Keys evicted to make room, for the shell to delete ({@link #takeEvicted}). */
  private final List<String> evicted = new ArrayList<>();
  private long evictedTotal;

  /** What the stored record of a key says (null in {@link #decide} when there is none). */
  public record Stored(byte[] fingerprint, long recordedAtMillis, boolean answered) {}

  public sealed interface Decision {
    /** Run the write; its commit records the key. The shell must call {@link #finish}. */
    record Run() implements Decision {}

    /** Answer the stored answer again; nothing runs. */
    record Replay() implements Decision {}

    /**
     * The write committed but its answer was never recorded (a crash between the commit and the
     * answer): rebuild the answer from the stored record; nothing runs.
     */
    record Rebuild() implements Decision {}

    /** The key was used for a different request: 422 {@code idempotency_key_reused}. */
    record Reused() implements Decision {}

    /** The first attempt is still running: 409 {@code conflict}, retry later. */
    record InProgress() implements Decision {}

    /** {@code maxKeys} keys are in progress at once: 429 {@code overloaded}, retry later. */
    record Full() implements Decision {}
  }

  public IdempotencyCore(long retentionMillis, int maxKeys) {
    Invariants.check(retentionMillis > 0 && maxKeys > 0, "positive retention and key bound");
    this.retentionMillis = retentionMillis;
    this.maxKeys = maxKeys;
  }

  /** Null when the header value is a valid key, else why not. */
  public static String invalidKey(String key) {
    if (key == null || key.isEmpty()) {
      return "Idempotency-Key must not be empty";
    }
    if (key.length() > MAX_KEY_LENGTH) {
      return "Idempotency-Key is longer than " + MAX_KEY_LENGTH + " characters";
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x21 || c > 0x7E) {
        return "Idempotency-Key may hold only visible ASCII characters (0x21 to 0x7E)";
      }
    }
    return null;
  }

  /**
   * The key's identity: its namespace (the name of the client's token, empty without tokens), a
   * NUL (which no valid key holds), the key: two tokens' keys never meet.
   */
  public static String qualifiedKey(String namespace, String key) {
    return namespace + "\u0000" + key;
  }

  public boolean expired(long recordedAtMillis, long nowMillis) {
    return nowMillis - recordedAtMillis >= retentionMillis;
  }

  /**
   * Decides a request; on {@link Decision.Run} the key is in progress until {@link #finish}.
   * {@code stillRunning}: the engine may still commit an earlier attempt with this key (one whose
   * caller got {@code outcome_unknown} because no answer came in time): a new attempt now could
   * apply the write twice, so it waits.
   */
  public Decision decide(String qualifiedKey, byte[] fingerprint, Stored stored,
      boolean stillRunning, long nowMillis) {
    if (forgetting.contains(qualifiedKey)) {
      return new Decision.InProgress();
    }
    byte[] running = inProgress.get(qualifiedKey);
    if (running != null) {
      return Arrays.equals(running, fingerprint) ? new Decision.InProgress()
          : new Decision.Reused();
    }
    if (stored != null && !expired(stored.recordedAtMillis(), nowMillis)) {
      if (!Arrays.equals(stored.fingerprint(), fingerprint)) {
        return new Decision.Reused();
      }
      return stored.answered() ? new Decision.Replay() : new Decision.Rebuild();
    }
    if (stillRunning) {
      return new Decision.InProgress();
    }
    if (!recordedAt.containsKey(qualifiedKey) && recordedAt.size() + inProgress.size() >= maxKeys
        && !evictOldest()) {
      return new Decision.Full();
    }
    inProgress.put(qualifiedKey, fingerprint.clone());
    return new Decision.Run();
  }

  /**
   * The first attempt is over. {@code recorded}: its key is now durable (it committed, or its
   * answer was stored), recorded at {@code recordedAtMillis}; otherwise nothing is remembered
   * and a retry runs again.
   */
  public void finish(String qualifiedKey, boolean recorded, long recordedAtMillis) {
    Invariants.check(inProgress.remove(qualifiedKey) != null, "finished %s, not in progress",
        qualifiedKey);
    if (recorded) {
      remember(qualifiedKey, recordedAtMillis);
    }
  }

  /** Counts a durable record (at start, for every stored one; after a recorded first attempt). */
  public void remember(String qualifiedKey, long recordedAtMillis) {
    recordedAt.put(qualifiedKey, recordedAtMillis);
    expiryOrder.addLast(new Entry(qualifiedKey, recordedAtMillis));
  }

  /**
   * Removes and returns the keys expired at {@code nowMillis}, for the shell to delete from
   * storage and then report {@link #forgotten}. Entries are in recording order, as recording
   * times are wall-clock times of first attempts; one recorded out of order (the clock stepped
   * back) is pruned once the entries before it are.
   */
  public List<String> pruneExpired(long nowMillis) {
    return forgetOldest(recordedAtMillis -> expired(recordedAtMillis, nowMillis),
        Integer.MAX_VALUE);
  }

  /**
   * Forgets the oldest remembered key that is not in progress (it joins the keys being forgotten:
   * a retry with it waits until its record is deleted); false when there is none.
   */
  private boolean evictOldest() {
    List<String> oldest = forgetOldest(recordedAtMillis -> true, 1);
    evicted.addAll(oldest);
    evictedTotal += oldest.size();
    return !oldest.isEmpty();
  }

  /**
   * Forgets remembered keys in recording order while the oldest entry's recording time is {@code
   * due}, at most {@code limit} of them. Stale entries (a key recorded again since) are dropped; a
   * key running again over its record keeps its entry, in place: deleting its record now could
   * delete the new one.
   */
  private List<String> forgetOldest(java.util.function.LongPredicate due, int limit) {
    List<String> forgotten = new ArrayList<>();
    List<Entry> running = new ArrayList<>();
    while (forgotten.size() < limit && !expiryOrder.isEmpty()
        && due.test(expiryOrder.peekFirst().recordedAtMillis())) {
      Entry entry = expiryOrder.pollFirst();
      Long live = recordedAt.get(entry.qualifiedKey());
      if (live == null || live != entry.recordedAtMillis()) {
        continue;
      }
      if (inProgress.containsKey(entry.qualifiedKey())) {
        running.add(entry);
        continue;
      }
      recordedAt.remove(entry.qualifiedKey());
      forgetting.add(entry.qualifiedKey());
      forgotten.add(entry.qualifiedKey());
    }
    for (int index = running.size() - 1; index >= 0; index--) {
      expiryOrder.addFirst(running.get(index));
    }
    return forgotten;
  }

  /**
   * Removes and returns the keys evicted by {@link #decide} to make room, for the shell to delete
   * from storage and then report {@link #forgotten}, as for expired ones.
   */
  public List<String> takeEvicted() {
    List<String> taken = List.copyOf(evicted);
    evicted.clear();
    return taken;
  }

  /** Keys evicted before their retention ended, since start. */
  public long evictedTotal() {
    return evictedTotal;
  }

  /** The recording time of the oldest remembered key, or -1 when none is remembered. */
  public long oldestRecordedAtMillis() {
    for (Entry entry : expiryOrder) {
      Long live = recordedAt.get(entry.qualifiedKey());
      if (live != null && live == entry.recordedAtMillis()) {
        return live;
      }
    }
    return -1;
  }

  /** The deletion of a pruned key's record is done (or failed: the record then expires again). */
  public void forgotten(String qualifiedKey) {
    forgetting.remove(qualifiedKey);
  }

  /** Keys remembered (durable, not yet pruned). */
  public int remembered() {
    return recordedAt.size();
  }

  public int inProgressCount() {
    return inProgress.size();
  }
}
