package dev.troupe.runtime;

import com.typesafe.config.Config;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The outcomes of the last transactions this node coordinated, in a ring of fixed size: what the
 * console's transactions page and {@code GET /v1/transactions/recent} show (committed, aborted
 * with the reason, failed with the error code). A window for people looking at a running node,
 * not a record: nothing is persisted, a restart starts empty, and older outcomes are overwritten.
 *
 * <p>Invariants: every outcome gets the next sequence number (1, 2, ...); the ring keeps at most
 * {@code capacity} outcomes, the newest; a page lists outcomes newest first, each at most once,
 * strictly below its cursor, so paging with {@link Page#next} never repeats an outcome (one
 * overwritten meanwhile is skipped, never shown in its place).
 *
 * <p>Cost on the commit path: {@link #record} is one atomic increment, one small allocation (the
 * outcome, with at most {@code max-entities} ids copied) and one array store; no lock, no clock
 * read beyond what the caller passes.
 *
 * <p>Concurrency: {@link #record} and {@link #page} run on any thread at once. Each slot holds an
 * immutable {@link Outcome} carrying its own sequence number, so a reader that finds another
 * sequence in a slot (overwritten, or not yet stored) skips it instead of showing a wrong one.
 */
public final class RecentTransactions {
  /** How a transaction ran. */
  public enum Kind {
    DYNAMIC,
    PLANNED,
    INTERACTIVE;

    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * One transaction's outcome.
   *
   * @param sequence its place in this node's order of outcomes (the paging cursor)
   * @param transactionId the id of its last attempt (the committed one when it committed)
   * @param committed whether it committed
   * @param code the error code's wire name when it did not commit (null when it did)
   * @param reason the abort reason when the code is {@code aborted} (null otherwise, or unknown)
   * @param message the error's message, cut to {@code max-message-chars} (null when committed)
   * @param entities the first {@code max-entities} entities it touched
   * @param entityCount how many entities it touched in all
   * @param version its commit timestamp when it committed, else 0
   * @param finishedAtMillis when its outcome was known, milliseconds since the epoch
   * @param durationMicros from its start to its outcome
   */
  public record Outcome(long sequence, long transactionId, Kind kind, boolean committed,
      String code, String reason, String message, List<EntityId> entities, int entityCount,
      long version, long finishedAtMillis, long durationMicros) {
    public Outcome {
      entities = List.copyOf(entities);
    }
  }

  /** A page: outcomes newest first; {@code next} is the cursor of the next page, or null. */
  public record Page(List<Outcome> outcomes, Long next) {}

  /**
   * The {@code troupe.recent-transactions} settings (reference.conf documents each).
   *
   * @param capacity outcomes the ring keeps
   * @param defaultLimit outcomes in a page when the request names no limit
   * @param maxLimit most outcomes a request may ask for
   * @param maxEntities entity ids kept per outcome (the count of all is kept too)
   * @param maxMessageChars characters of an error message kept per outcome
   */
  public record Settings(int capacity, int defaultLimit, int maxLimit, int maxEntities,
      int maxMessageChars) {
    public Settings {
      if (capacity < 1 || defaultLimit < 1 || maxLimit < defaultLimit || maxEntities < 1
          || maxMessageChars < 1) {
        throw new IllegalArgumentException("troupe.recent-transactions: need capacity >= 1,"
            + " 1 <= default-limit <= max-limit, max-entities >= 1 and max-message-chars >= 1,"
            + " was " + capacity + ", " + defaultLimit + ", " + maxLimit + ", " + maxEntities
            + ", " + maxMessageChars);
      }
    }

    /** Parses {@code troupe.recent-transactions} of the whole configuration. */
    public static Settings fromConfig(Config config) {
      Config section = config.getConfig("troupe.recent-transactions");
      return new Settings(section.getInt("capacity"), section.getInt("default-limit"),
          section.getInt("max-limit"), section.getInt("max-entities"),
          section.getInt("max-message-chars"));
    }
  }

  private final Settings settings;
  private final AtomicLong last = new AtomicLong();
  private final AtomicReferenceArray<Outcome> slots;

  public RecentTransactions(Settings settings) {
    this.settings = settings;
    this.slots = new AtomicReferenceArray<>(settings.capacity());
  }

  public Settings settings() {
    return settings;
  }

  /** Records a committed transaction. */
  public void committed(long transactionId, Kind kind, Collection<EntityId> entities,
      long version, long finishedAtMillis, long durationMicros) {
    store(transactionId, kind, true, null, null, null, entities, version, finishedAtMillis,
        durationMicros);
  }

  /** Records a transaction that did not commit: aborted (with its reason) or failed otherwise. */
  public void failed(long transactionId, Kind kind, TroupeException error,
      Collection<EntityId> entities, long finishedAtMillis, long durationMicros) {
    String message = error.getMessage();
    if (message != null && message.length() > settings.maxMessageChars()) {
      message = message.substring(0, settings.maxMessageChars()) + "...";
    }
    store(transactionId, kind, false, error.code().wireName(),
        error.code() == ErrorCode.ABORTED ? error.reason() : null, message, entities, 0,
        finishedAtMillis, durationMicros);
  }

  private void store(long transactionId, Kind kind, boolean committed, String code, String reason,
      String message, Collection<EntityId> entities, long version, long finishedAtMillis,
      long durationMicros) {
    List<EntityId> kept = new ArrayList<>(Math.min(entities.size(), settings.maxEntities()));
    for (EntityId entity : entities) {
      if (kept.size() == settings.maxEntities()) {
        break;
      }
      kept.add(entity);
    }
    long sequence = last.incrementAndGet();
    slots.set(slot(sequence), new Outcome(sequence, transactionId, kind, committed, code, reason,
        message, kept, entities.size(), version, finishedAtMillis, durationMicros));
  }

  /**
   * At most {@code limit} outcomes, newest first, with sequence numbers below {@code before}
   * (null: from the newest). {@code next} is null when no older outcome is kept.
   */
  public Page page(Long before, int limit) {
    Invariants.check(limit >= 1, "a page of transactions holds at least one, asked for %d", limit);
    long newest = last.get();
    long oldestKept = Math.max(1, newest - settings.capacity() + 1);
    long from = before == null ? newest : Math.min(newest, before - 1);
    List<Outcome> found = new ArrayList<>(Math.min(limit, settings.capacity()));
    long sequence = from;
    for (; sequence >= oldestKept && found.size() < limit; sequence--) {
      Outcome outcome = slots.get(slot(sequence));
      // Another sequence: overwritten by a newer outcome, or this one not stored yet.
      if (outcome != null && outcome.sequence() == sequence) {
        found.add(outcome);
      }
    }
    boolean more = sequence >= oldestKept && !found.isEmpty();
    return new Page(found, more ? found.get(found.size() - 1).sequence() : null);
  }

  private int slot(long sequence) {
    return (int) (sequence % settings.capacity());
  }
}
