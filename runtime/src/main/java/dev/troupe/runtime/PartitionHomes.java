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
 * <p><b>A partition whose host was never learned</b> is sent as always while every member is
 * well. While a member is unreachable or downed it may be that member's, so it is <b>uncertain</b>
 * ({@link Route#PROBE} too): reads go, turns and steps wait, and the shell probes it (a read,
 * {@link #probed}). A live host answers a probe in a round trip, which teaches the home (the
 * partition is then sent, or held, as any known one); a probe that stays unanswered is evidence
 * that the partition is on the lost member. So, at the downing or removal of a member, a message
 * sent with its partition's home unknown counts as sent to that member ({@link #mayHaveGoneTo})
 * when its partition is still unknown and was probed in vain (its caller is answered then, not
 * after the pending-reply timeout: the bench's 30 s), and at the removal such a partition moves
 * with the member's own ({@link #removed}). A message sent with an unknown home and never probed
 * (no member was in trouble) counts as sent elsewhere: a graceful leave answers nobody it cannot
 * have reached.
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
  /** Probed while its home was unknown, and no answer since (see the class comment). */
  private final boolean[] probedInVain;
  private final Map<Integer, Standing> troubled = new HashMap<>();

  PartitionHomes(int partitions) {
    Invariants.check(partitions > 0, "partitions must be positive");
    knownHost = new int[partitions];
    moving = new boolean[partitions];
    probedInVain = new boolean[partitions];
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
    if (host == UNKNOWN) {
      // Unknown while a member is in trouble: it may be that member's (uncertain).
      return troubled.isEmpty() ? Route.SEND : Route.PROBE;
    }
    return troubled.containsKey(host) ? Route.HOLD : Route.SEND;
  }

  /**
   * Whether {@code partition}'s home is unknown while a member is in trouble (so that messages
   * sent to it with an unknown home are worth a probe: it may be on the troubled member).
   */
  boolean uncertain(int partition) {
    return !moving[partition] && knownHost[partition] == UNKNOWN && !troubled.isEmpty();
  }

  /** A probe (a read) of {@code partition} was sent: unanswered, it marks it as the lost member's. */
  void probed(int partition) {
    if (knownHost[partition] == UNKNOWN) {
      probedInVain[partition] = true;
    }
  }

  /**
   * Whether a message for {@code partition} sent when its known host was {@code sentTo} may have
   * gone to {@code node} (declared down, or removed): it did if it was sent to it; if it was sent
   * with an unknown home, only if the partition turned out to be {@code node}'s, or is still
   * unknown though probed in vain (a live host would have answered the probe).
   */
  boolean mayHaveGoneTo(int sentTo, int partition, int node) {
    if (sentTo != UNKNOWN) {
      return sentTo == node;
    }
    int host = knownHost[partition];
    return host == node || (host == UNKNOWN && probedInVain[partition]);
  }

  /**
   * {@code node} answered a message for {@code partition}: it hosts it. Answers whether this
   * ended a hold or a move (what waits for the partition may go now).
   */
  boolean answered(int partition, int node) {
    Route before = route(partition);
    knownHost[partition] = node;
    moving[partition] = false;
    probedInVain[partition] = false;
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
    // probedInVain stays: still no answer since the probe.
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
   * {@code node} was removed (after a downing, or after it left): its partitions are moving, and
   * so are the partitions of unknown home probed in vain while it was in trouble (most likely
   * its: their new home answers a probe once it runs; a turn sent now could meet a region that
   * has not yet seen the removal). Answers them.
   */
  List<Integer> removed(int node) {
    troubled.remove(node);
    List<Integer> partitions = new ArrayList<>();
    for (int partition = 0; partition < knownHost.length; partition++) {
      boolean itsOwn = knownHost[partition] == node;
      boolean likelyItsOwn = knownHost[partition] == UNKNOWN && probedInVain[partition];
      if (itsOwn || likelyItsOwn) {
        partitions.add(partition);
        knownHost[partition] = UNKNOWN;
        moving[partition] = true;
        probedInVain[partition] = false;
      }
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
