package dev.troupe.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.value.Tag;
import java.util.Set;

/**
 * The unit the journal records: one effect on one key of one entity (or on the whole entity).
 * Operations are downstream effects, self-contained and deterministic to apply: an add carries its
 * unique tag, a remove the tags it observed, so replaying the journal in commit order always
 * rebuilds the same state (incremental logging, never whole states). Register timestamps come from
 * the record's commit timestamp at apply time, except for {@link AssignReplicated}, which carries
 * the stamp it had at its origin data centre.
 */
public sealed interface Operation {
  /** The key this operation touches; the empty string for {@link DeleteEntity}. */
  String key();

  /**
   * Register assignment (last writer wins across data centres), stamped with the record's commit
   * timestamp and data centre at apply time.
   */
  record Assign(String key, JsonNode value) implements Operation {}

  /**
   * A register write made in another data centre, applied here with the stamp it had there: the
   * commit timestamp of its journal record at the origin and the origin's id. Merged last writer
   * wins on (timestamp, originDc): the register already present is kept if it wins, so every data
   * centre ends with the same value whatever order concurrent writes arrive in.
   */
  record AssignReplicated(String key, JsonNode value, long timestamp, int originDc)
      implements Operation {}

  /** Removes one key, whatever its kind. */
  record DeleteKey(String key) implements Operation {}

  /** PN-counter increment; negative values decrement. */
  record Increment(String key, long by) implements Operation {}

  /** Add-wins OR-set add, with the unique tag of this addition. */
  record AddElement(String key, JsonNode element, Tag tag) implements Operation {}

  /** OR-set remove of the additions (tags) the turn observed. */
  record RemoveElement(String key, JsonNode element, Set<Tag> observedTags) implements Operation {}

  /**
   * Records (or replaces) one dependency in a hidden dependency key ({@code $out:k} or {@code
   * $in:k}), with the leader's last forwarded value on the follower's side (else null).
   */
  record RecordDependency(String key, dev.troupe.model.dependency.Dependency dependency,
      JsonNode contribution) implements Operation {}

  /** Forgets one dependency of a hidden dependency key; the key goes with its last record. */
  record ForgetDependency(String key, String dependencyId) implements Operation {}

  /**
   * A causal message (TTCC) the sending entity's turn sends: an operation of the sender's
   * transaction, so it exists exactly when that transaction commits, is in its journal record and
   * in the replication log's part of the sender. It changes no state (the materializer skips it,
   * and it does not make the sender exist); the sender's data centre delivers it afterwards as a
   * {@code Turn.DeliverMessage} to {@code receiver} (docs/ARCHITECTURE.md, "Causal messages").
   *
   * @param receiver the entity the message goes to
   * @param action the receiver's action to invoke
   * @param args the action's arguments
   */
  record SendMessage(EntityId receiver, String action, JsonNode args) implements Operation {
    /** Not a key of the sender's state: messages touch none. */
    public static final String KEY = "$message";

    @Override
    public String key() {
      return KEY;
    }
  }

  /** Deletes the entity: all keys go, the entity no longer exists until written again. */
  record DeleteEntity() implements Operation {
    @Override
    public String key() {
      return "";
    }
  }
}
