package dev.troupe.txn.wire;

import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.txn.Forward;
import java.util.List;
import java.util.Map;

/**
 * The wire form of a turn's or a part's result ({@code TurnResult}): a vote, a commit's
 * acknowledgement, a step's or a single turn's answer. A value (records all the way down), so
 * messages compare by content.
 */
public sealed interface WireResult {
  /**
   * Yes, or done: the fields of {@code TurnResult.Done}, its forwarding flattened. {@code state}
   * is null when the entity is absent after the turn (it deleted the entity).
   *
   * @param deepestUpstream per dependency registered in the part, the longest walk up from its
   *     leader
   * @param deepestDownstream likewise down from its follower
   */
  record Done(long version, EntityState state, boolean wrote, long readVersion,
      List<Forward> forwards, Map<String, Integer> deepestUpstream,
      Map<String, Integer> deepestDownstream) implements WireResult {
    public Done {
      forwards = List.copyOf(forwards);
      deepestUpstream = Map.copyOf(deepestUpstream);
      deepestDownstream = Map.copyOf(deepestDownstream);
    }
  }

  /**
   * No, or failed: a {@code TroupeException}'s code, machine-readable reason (null for none) and
   * message.
   */
  record Failed(ErrorCode code, String reason, String message) implements WireResult {
    public Failed {
      if (code == null) {
        throw new IllegalArgumentException("a failure needs an error code");
      }
      message = message == null ? "" : message;
    }
  }
}
