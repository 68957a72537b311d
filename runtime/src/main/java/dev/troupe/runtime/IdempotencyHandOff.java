package dev.troupe.runtime;

import dev.troupe.storage.IdempotencyRecord;

/**
 * Hands the idempotency record of a write being started to the write entry point it calls (see
 * {@link Troupe#idempotently}). A thread-local because every write entry point ({@link
 * Troupe#turn}, {@link Troupe#transact}, {@link Troupe#commitInteractive}, dependency
 * registration) claims it synchronously when called; it never outlives the {@code idempotently}
 * call that set it, so the API's write methods keep their signatures.
 */
final class IdempotencyHandOff {
  private final ThreadLocal<IdempotencyRecord> starting = new ThreadLocal<>();
  private final ThreadLocal<Boolean> claimed = new ThreadLocal<>();

  /** Runs {@code write} with {@code record} offered; whether an entry point claimed it. */
  boolean idempotently(IdempotencyRecord record, Runnable write) {
    starting.set(record);
    claimed.set(Boolean.FALSE);
    try {
      write.run();
      return Boolean.TRUE.equals(claimed.get());
    } finally {
      starting.remove();
      claimed.remove();
    }
  }

  /** The record offered to the write starting on this thread, taken once; null if none. */
  IdempotencyRecord claim() {
    IdempotencyRecord record = starting.get();
    if (record != null) {
      starting.remove();
      claimed.set(Boolean.TRUE);
    }
    return record;
  }
}
