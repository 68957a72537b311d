package dev.troupe.runtime;

import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.StorageEvents;
import dev.troupe.storage.StoreHealth;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs what storage reports at ERROR, so a supervisor or an operator hears of it, and tells the
 * embedder's listener once when the store fails (see {@link Troupe#onStorageFailure}).
 */
final class LoudStorageEvents implements StorageEvents {
  private static final Logger log = LoggerFactory.getLogger(Troupe.class);

  private final AtomicBoolean listenerTold = new AtomicBoolean();
  private volatile Throwable failure;
  /** Told once when the store fails (the server may stop the process); set by the embedder. */
  private volatile Consumer<Throwable> listener;
  /** Physical time of the last corruption logged, to log a burst of damaged reads once a second. */
  private final AtomicLong lastCorruptionLoggedMillis = new AtomicLong();
  /** The store's health, for the count of damaged reads (set once the store is open). */
  private volatile Supplier<StoreHealth> health;

  void useHealth(Supplier<StoreHealth> health) {
    this.health = health;
  }

  /** Registers the listener; tells it at once if the store failed already. */
  /** Who hears of a partition this node acquired and lost to a newer owner (the cluster). */
  private volatile java.util.function.IntConsumer partitionLostListener = partition -> {};

  void onPartitionLost(java.util.function.IntConsumer listener) {
    this.partitionLostListener = listener;
  }

  @Override
  public void partitionLost(int partition, dev.troupe.storage.FencedException cause) {
    log.warn("partition {} was fenced: another node owns it now ({})", partition,
        cause.getMessage());
    partitionLostListener.accept(partition);
  }

  void onStorageFailure(Consumer<Throwable> listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    Throwable failed = failure;
    if (failed != null) {
      tellListener(failed);
    }
  }

  @Override
  public void storeFailed(Throwable cause) {
    if (failure == null) {
      failure = cause;
      log.error("storage failed: every write is refused until the node restarts"
          + " (acknowledged writes are safe; outcomes in flight are unknown)", cause);
      tellListener(cause);
    }
  }

  private void tellListener(Throwable cause) {
    Consumer<Throwable> told = listener;
    if (told != null && listenerTold.compareAndSet(false, true)) {
      told.accept(cause);
    }
  }

  @Override
  public void corruptionDetected(String where, CorruptDataException damage) {
    long now = System.currentTimeMillis();
    long last = lastCorruptionLoggedMillis.get();
    if (now - last >= 1000 && lastCorruptionLoggedMillis.compareAndSet(last, now)) {
      log.error("corrupt data in {}: refused to serve it or write over it ({} damaged reads so"
          + " far; later ones within a second are counted, not logged); run troupe check,"
          + " see docs/OPERATIONS.md", where, health.get().corruptionsDetected(), damage);
    }
  }
}
