package dev.troupe.runtime;

import dev.troupe.model.Invariants;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where this node believes each partition is hosted, and whether a message for it may be sent now
 * (docs/ARCHITECTURE.md, "Failing over fast"): the pure core of {@link RemoteReplies}' failover
 * behaviour. No threads, clocks or Pekko; its owner serializes the calls.
 *
 * <p><b>Why.</b> Sharding hides which member hosts a partition, and a message sent to a member
 * that died is lost without a word: its caller waited for {@code
 * troupe.transport.pending-reply-timeout-millis} (30 s) while the partition was already running
 * elsewhere, and the callers piling up behind it filled admission. So every answer teaches this
 * node its partition's host ({@link #answered}), and the membership's verdicts on a member ({@link
 * #unreachable}, {@link #reachable}, {@link #downed}, {@link #removed}) tell which partitions have
 * no live home:
 *
 * <ul>
 *   <li>a partition whose known host is unreachable or downed is {@link Route#HOLD}: a message
 *       sent now would be lost (or, for an unreachable member that comes back, delivered late);
 *       it waits, bounded, for the member to come back or to be removed;
 *   <li>a partition whose known host was removed is <b>moving</b> ({@link Route#PROBE}): sharding
 *       gives it a new home, but nothing tells this node when; a read sent now waits in sharding's
 *       buffer and its answer names the new host (which ends the move), so reads go and a turn or
 *       step waits until then (or a read sent for the purpose: a probe) — a turn held here was
 *       never sent, so refusing it after the bound is a plain {@code 503}, provably not applied;
 *   <li>anything else is {@link Route#SEND}.
 * </ul>
 *
 * <p>A partition whose host was never learned is sent as always (the cost of not knowing: its
 * caller may wait for the pending-reply timeout).
 */
final class PartitionHomes {
  /** What to do with a message for a partition now. */
  enum Route {
    /** Send it. */
    SEND,
    /** Keep it: its partition's host is unreachable or downed. */
    HOLD,
    /** Its partition is moving: reads go (their answers name the new host); the rest wait. */
    PROBE
  }

  /** A member's standing, as the membership last said. */
  private enum Standing { UNREACHABLE, DOWNED }

  static final int UNKNOWN = -1;

  private final int[] knownHost;
  private final boolean[] moving;
  private final Map<Integer, Standing> troubled = new HashMap<>();

  PartitionHomes(int partitions) {
    Invariants.check(partitions > 0, "partitions must be positive");
    knownHost = new int[partitions];
    moving = new boolean[partitions];
    Arrays.fill(knownHost, UNKNOWN);
  }

  /** The node that last answered for {@code partition}, or {@link #UNKNOWN}. */
  int knownHost(int partition) {
    return knownHost[partition];
  }

  /** Whether nothing is held or moving: the common case, in which every message is sent. */
  boolean settled() {
    if (!troubled.isEmpty()) {
      return false;
    }
    for (boolean move : moving) {
      if (move) {
        return false;
      }
    }
    return true;
  }

  Route route(int partition) {
    if (moving[partition]) {
      return Route.PROBE;
    }
    int host = knownHost[partition];
    return host != UNKNOWN && troubled.containsKey(host) ? Route.HOLD : Route.SEND;
  }

  /**
   * {@code node} answered a message for {@code partition}: it hosts it. Answers whether this
   * ended a hold or a move (what waits for the partition may go now).
   */
  boolean answered(int partition, int node) {
    Route before = route(partition);
    knownHost[partition] = node;
    moving[partition] = false;
    // An answer shows that a member with this node id serves now: a restarted node (a new
    // incarnation with the same id) whose old incarnation's verdict is still recorded here, or
    // one whose "reachable" was missed. Holding its partitions would hold them for good.
    troubled.remove(node);
    return before != Route.SEND && route(partition) == Route.SEND;
  }

  /**
   * A message for {@code partition} was held for the whole rehoming wait: this node's belief about
   * its home is stale or the verdict that holds it will not change (a member's verdicts are keyed
   * by node id, and a restarted node is a new member). Forget the home, so that the next message
   * is sent through sharding and its answer names the home; never hold a partition for good.
   */
  void heldTooLong(int partition) {
    knownHost[partition] = UNKNOWN;
    moving[partition] = false;
  }

  /**
   * {@code node} refused a message for {@code partition} with {@code not_owner} (it handed the
   * partition off, or lost it): unless another host is known already, the partition is moving.
   */
  void refused(int partition, int node) {
    if (knownHost[partition] == node || knownHost[partition] == UNKNOWN) {
      knownHost[partition] = UNKNOWN;
      moving[partition] = true;
    }
  }

  /** The failure detector lost {@code node}: its partitions are held. */
  void unreachable(int node) {
    troubled.putIfAbsent(node, Standing.UNREACHABLE);
  }

  /**
   * The failure detector reaches {@code node} again (before any downing): answers its partitions,
   * whose held messages may go now.
   */
  List<Integer> reachable(int node) {
    if (troubled.get(node) != Standing.UNREACHABLE) {
      return List.of();
    }
    troubled.remove(node);
    return partitionsOf(node);
  }

  /**
   * {@code node} was declared down: it will never answer again (a downed member does not come
   * back; a restart is a new member). Its partitions stay held until it is removed.
   */
  void downed(int node) {
    troubled.put(node, Standing.DOWNED);
  }

  /**
   * {@code node} was removed (after a downing, or after it left): its partitions are moving.
   * Answers them.
   */
  List<Integer> removed(int node) {
    troubled.remove(node);
    List<Integer> partitions = partitionsOf(node);
    for (int partition : partitions) {
      knownHost[partition] = UNKNOWN;
      moving[partition] = true;
    }
    return partitions;
  }

  private List<Integer> partitionsOf(int node) {
    List<Integer> partitions = new ArrayList<>();
    for (int partition = 0; partition < knownHost.length; partition++) {
      if (knownHost[partition] == node) {
        partitions.add(partition);
      }
    }
    return partitions;
  }
}
