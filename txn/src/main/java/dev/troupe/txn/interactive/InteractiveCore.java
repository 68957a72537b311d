package dev.troupe.txn.interactive;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Turn;
import dev.troupe.txn.coordinator.CoordinatorCore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The lifecycle of a node's interactive transactions, driven request by request: begin, steps (one
 * at a time per transaction), commit or abort, and the idle timeout. What a transaction touched is
 * kept here so that its commit becomes one part per entity for the coordinator
 * ({@link CoordinatorCore}), and its abort a message to each entity it locked.
 *
 * <p><b>Invariants.</b> A transaction is open from {@link #begin} until exactly one of {@link
 * #commit}, {@link #abort} or {@link #expireIfIdle} ends it; ended transactions are forgotten, so
 * every later request about one is {@code not_found}. At most one step is in progress per
 * transaction, and an idle timeout never ends a transaction whose step is in progress (the step's
 * answer counts as activity). At most {@code maxOpen} transactions are open and each touches at
 * most {@code maxParticipants} entities. Only steps that succeeded become part of the commit.
 *
 * <p><b>Concurrency.</b> Pure and single-threaded: time comes in as {@code nowMillis}; the
 * runtime's shell ({@code Troupe}) calls it under one lock and schedules a timer to call {@link
 * #expireIfIdle} at {@link #idleDeadlineMillis}.
 *
 * <p><b>Recovery.</b> Nothing here is durable: a restart ends every open interactive transaction,
 * and since none has voted, recovery finds no prepared part of one to resolve.
 */
public final class InteractiveCore {
  /**
   * @param maxOpen interactive transactions open at once
   * @param maxParticipants entities one transaction may touch
   * @param idleTimeoutMillis how long a transaction may stay without a request before it aborts
   */
  public record Limits(int maxOpen, int maxParticipants, long idleTimeoutMillis) {
    public Limits {
      if (maxOpen < 1 || maxParticipants < 1 || idleTimeoutMillis < 1) {
        throw new IllegalArgumentException("interactive limits must be positive");
      }
    }
  }

  /** One open transaction. */
  private static final class Session {
    final Map<EntityId, List<Turn>> steps = new LinkedHashMap<>();
    final Map<EntityId, CompiledType> types = new LinkedHashMap<>();
    final Set<EntityId> reads = new HashSet<>();
    boolean stepInProgress;
    long lastActivityMillis;
  }

  /** What a commit hands to the coordinator: one part per entity, and the entities' types. */
  public record Commit(Map<EntityId, CoordinatorCore.Part> parts,
      Map<EntityId, CompiledType> types) {}

  private final Limits limits;
  private final Map<Long, Session> open = new HashMap<>();

  public InteractiveCore(Limits limits) {
    this.limits = limits;
  }

  /**
   * Opens a transaction.
   *
   * @throws TroupeException {@code overloaded} when {@code maxOpen} are open
   */
  public void begin(long transactionId, long nowMillis) {
    if (open.size() >= limits.maxOpen()) {
      throw new TroupeException(ErrorCode.OVERLOADED, "%d interactive transactions are open;"
          .formatted(open.size()) + " retry later");
    }
    Session session = new Session();
    session.lastActivityMillis = nowMillis;
    if (open.putIfAbsent(transactionId, session) != null) {
      throw new IllegalStateException("transaction " + transactionId + " is already open");
    }
  }

  /**
   * A step on {@code entity} starts: it is now in progress.
   *
   * @throws TroupeException {@code not_found} if the transaction is not open, {@code
   *     invalid_request} if a step is already in progress, {@code too_large} if the entity would
   *     exceed {@code maxParticipants}
   */
  public void stepStarted(long transactionId, EntityId entity, CompiledType type,
      long nowMillis) {
    Session session = session(transactionId);
    if (session.stepInProgress) {
      throw TroupeException.invalid("transaction %d has a request in progress; send one at a time"
          .formatted(transactionId));
    }
    if (!session.types.containsKey(entity)
        && session.types.size() >= limits.maxParticipants()) {
      throw new TroupeException(ErrorCode.TOO_LARGE, "a transaction may touch at most %d"
          .formatted(limits.maxParticipants()) + " entities");
    }
    session.stepInProgress = true;
    session.types.putIfAbsent(entity, type);
    session.steps.computeIfAbsent(entity, ignored -> new ArrayList<>());
    session.lastActivityMillis = nowMillis;
  }

  /**
   * The step on {@code entity} answered. A successful one joins the transaction: {@code turn}, or
   * a read of the whole state when {@code turn} is null. No-op if the transaction ended meanwhile.
   */
  public void stepFinished(long transactionId, EntityId entity, Turn turn, boolean succeeded,
      long nowMillis) {
    Session session = open.get(transactionId);
    if (session == null) {
      return;
    }
    session.stepInProgress = false;
    session.lastActivityMillis = nowMillis;
    if (succeeded) {
      if (turn == null) {
        session.reads.add(entity);
      } else {
        session.steps.get(entity).add(turn);
      }
    }
  }

  /**
   * Ends the transaction for commit and returns its parts (empty if it touched nothing).
   *
   * @throws TroupeException {@code not_found} if it is not open, {@code invalid_request} if a
   *     step is in progress (it stays open)
   */
  public Commit commit(long transactionId) {
    Session session = session(transactionId);
    if (session.stepInProgress) {
      throw TroupeException.invalid("transaction %d has a request in progress"
          .formatted(transactionId));
    }
    open.remove(transactionId);
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    session.steps.forEach((entity, turns) -> parts.put(entity,
        new CoordinatorCore.Part(turns, session.reads.contains(entity))));
    return new Commit(parts, new LinkedHashMap<>(session.types));
  }

  /**
   * Ends the transaction for abort; returns the entities it touched (whose locks must be
   * released), or empty if it was not open.
   */
  public Optional<List<EntityId>> abort(long transactionId) {
    Session session = open.remove(transactionId);
    return session == null ? Optional.empty() : Optional.of(List.copyOf(session.types.keySet()));
  }

  /**
   * Aborts the transaction if it has been idle for the timeout (no step in progress, no request
   * since {@code nowMillis - idleTimeoutMillis}); returns the entities it touched, or empty if it
   * is still active or no longer open.
   */
  public Optional<List<EntityId>> expireIfIdle(long transactionId, long nowMillis) {
    Session session = open.get(transactionId);
    if (session == null || session.stepInProgress
        || nowMillis < session.lastActivityMillis + limits.idleTimeoutMillis()) {
      return Optional.empty();
    }
    return abort(transactionId);
  }

  /** When the transaction times out if nothing happens before; empty if it is not open. */
  public Optional<Long> idleDeadlineMillis(long transactionId) {
    Session session = open.get(transactionId);
    return session == null
        ? Optional.empty()
        : Optional.of(session.lastActivityMillis + limits.idleTimeoutMillis());
  }

  /**
   * Checks that the transaction is open.
   *
   * @throws TroupeException {@code not_found} if it is not
   */
  public void requireOpen(long transactionId) {
    session(transactionId);
  }

  public boolean isOpen(long transactionId) {
    return open.containsKey(transactionId);
  }

  private Session session(long transactionId) {
    Session session = open.get(transactionId);
    if (session == null) {
      throw new TroupeException(ErrorCode.NOT_FOUND, "no open transaction %d (it committed,"
          .formatted(transactionId) + " aborted or timed out)");
    }
    return session;
  }
}
