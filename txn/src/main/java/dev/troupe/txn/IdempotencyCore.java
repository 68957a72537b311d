package dev.troupe.txn;

import dev.troupe.model.Invariants;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.ArrayList;
import java.util.Map;

/**
 * Decides what a write carrying an {@code Idempotency-Key} does: run, replay the first attempt's
 * answer, or be refused. Pure: no storage, no threads, no clock (time is passed in).
 *
 * <p>A key's identity is {@link #scopedKey}: a scope (the token's name once tokens scope keys,
 * empty until then) and the key. A request's {@code fingerprint} is a hash of its method, path and
 * body; the same key with another fingerprint is a different request.
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

  private record Entry(String scopedKey, long recordedAtMillis) {}

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

    /** {@code maxKeys} keys are remembered: 429 {@code overloaded} until some expire. */
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
   * The key's identity: the scope, a NUL (which no valid key or token name holds), the key. The
   * scope is empty until tokens scope keys.
   */
  public static String scopedKey(String scope, String key) {
    return scope + "\u0000" + key;
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
  public Decision decide(String scopedKey, byte[] fingerprint, Stored stored,
      boolean stillRunning, long nowMillis) {
    if (forgetting.contains(scopedKey)) {
      return new Decision.InProgress();
    }
    byte[] running = inProgress.get(scopedKey);
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
    if (!recordedAt.containsKey(scopedKey) && recordedAt.size() + inProgress.size() >= maxKeys) {
      return new Decision.Full();
    }
    inProgress.put(scopedKey, fingerprint.clone());
    return new Decision.Run();
  }

  /**
   * The first attempt is over. {@code recorded}: its key is now durable (it committed, or its
   * answer was stored), recorded at {@code recordedAtMillis}; otherwise nothing is remembered
   * and a retry runs again.
   */
  public void finish(String scopedKey, boolean recorded, long recordedAtMillis) {
    Invariants.check(inProgress.remove(scopedKey) != null, "finished %s, not in progress",
        scopedKey);
    if (recorded) {
      remember(scopedKey, recordedAtMillis);
    }
  }

  /** Counts a durable record (at start, for every stored one; after a recorded first attempt). */
  public void remember(String scopedKey, long recordedAtMillis) {
    recordedAt.put(scopedKey, recordedAtMillis);
    expiryOrder.addLast(new Entry(scopedKey, recordedAtMillis));
  }

  /**
   * Removes and returns the keys expired at {@code nowMillis}, for the shell to delete from
   * storage and then report {@link #forgotten}. Entries are in recording order, as recording
   * times are wall-clock times of first attempts; one recorded out of order (the clock stepped
   * back) is pruned once the entries before it are.
   */
  public List<String> pruneExpired(long nowMillis) {
    List<String> expired = new ArrayList<>();
    List<Entry> running = new ArrayList<>();
    while (!expiryOrder.isEmpty()
        && expired(expiryOrder.peekFirst().recordedAtMillis(), nowMillis)) {
      Entry entry = expiryOrder.pollFirst();
      Long live = recordedAt.get(entry.scopedKey());
      if (live == null || live != entry.recordedAtMillis()) {
        continue; // stale: the key was recorded again since
      }
      if (inProgress.containsKey(entry.scopedKey())) {
        // Running again over its expired record: deleting now could delete the new record.
        running.add(entry);
        continue;
      }
      recordedAt.remove(entry.scopedKey());
      forgetting.add(entry.scopedKey());
      expired.add(entry.scopedKey());
    }
    running.forEach(expiryOrder::addFirst);
    return expired;
  }

  /** The deletion of a pruned key's record is done (or failed: the record then expires again). */
  public void forgotten(String scopedKey) {
    forgetting.remove(scopedKey);
  }

  /** Keys remembered (durable, not yet pruned). */
  public int remembered() {
    return recordedAt.size();
  }

  public int inProgressCount() {
    return inProgress.size();
  }
}
