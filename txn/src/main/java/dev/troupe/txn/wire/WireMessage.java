package dev.troupe.txn.wire;

import dev.troupe.model.EntityId;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.entity.LockTable;
import java.util.List;
import java.util.Map;

/**
 * Every message between cores that may cross a process: plain values (ids, timestamps, turns,
 * forwards, states), types by {@link TypeReference}; no compiled type, actor reference or future.
 * {@link WireCodec} gives each a type id and a version. Who sends which, and the core input or
 * effect each one carries, is in {@link CoordinatorMessages} and {@link ParticipantMessages}.
 *
 * <p>Resends are part of the protocol (a coordinator resends its decision until acknowledged, a
 * participant asks again about an in-doubt part, a network may duplicate), so a receiver must
 * take each message more than once; each names the transaction attempt it belongs to, and votes
 * and changed forwards their round, for the cores to recognize a duplicate.
 */
public sealed interface WireMessage {
  /**
   * Coordinator to participant: prepare this part and vote ({@code CoordinatorCore}'s {@code
   * SendPrepare}; the participant's {@code PrepareRequested}).
   *
   * @param startTimestamp the transaction's age for wait-die (kept across its retries); a planned
   *     transaction's position in its node's sequencer order (negative, below every dynamic age)
   * @param type the participant's type, resolved by the receiver's {@link TypeRegistry}
   * @param turns the participant's operations, in request order
   * @param readsState whether the transaction reads the participant's whole state
   * @param forwards what other participants forwarded to it (a follower brought in)
   * @param reserved keys a planned part locks for forwards it may receive
   * @param planned a planned transaction: it waits instead of dying
   */
  record Prepare(long transactionId, long startTimestamp, EntityId participant,
      TypeReference type, List<Turn> turns, boolean readsState, List<Forward> forwards,
      Map<String, LockTable.Mode> reserved, boolean planned) implements WireMessage {
    public Prepare {
      turns = List.copyOf(turns);
      forwards = List.copyOf(forwards);
      reserved = Map.copyOf(reserved);
    }
  }

  /**
   * Participant to coordinator: its vote on its part (yes is {@link WireResult.Done}).
   *
   * @param round what it answers: 1 for the prepare, {@code n} for the {@link ForwardsChanged}
   *     of round {@code n} (only the latest round's vote counts; a duplicate is recognized)
   */
  record Vote(long transactionId, EntityId participant, int round, WireResult vote)
      implements WireMessage {}

  /**
   * Coordinator to a participant that voted yes: the operations forwarded to it changed; evaluate
   * the part again with all of these and vote again ({@code SendForwards}; {@code
   * ForwardsReceived}).
   *
   * @param round the coordinator's round of this part (2 for the first forwards after the
   *     prepare); the vote that answers it names it
   */
  record ForwardsChanged(long transactionId, EntityId participant, int round,
      List<Forward> forwards) implements WireMessage {
    public ForwardsChanged {
      forwards = List.copyOf(forwards);
    }
  }

  /** Coordinator to participant: the decision ({@code SendDecision}; {@code DecisionReceived}). */
  record Decision(long transactionId, EntityId participant, boolean commit)
      implements WireMessage {}

  /** Participant to coordinator: the commit is applied and durable, with its result. */
  record Acknowledgement(long transactionId, EntityId participant, WireResult acknowledgement)
      implements WireMessage {}

  /**
   * An interactive transaction's node to an entity: one step ({@code StepRequested}). {@code turn}
   * null reads the whole state.
   */
  record StepRequest(long transactionId, long startTimestamp, EntityId entity,
      TypeReference type, Turn turn) implements WireMessage {}

  /** The entity's answer to a step: the state the transaction now sees, or the failure. */
  record StepAnswer(long transactionId, EntityId entity, WireResult answer)
      implements WireMessage {}

  /**
   * A request's node to an entity: one single-entity turn ({@code TurnRequested}).
   *
   * @param idempotencyRecord the client's idempotency record (its stored frame, storage's {@code
   *     Codec}) that must be written atomically with the turn's commit, in the store of the
   *     entity's node; null without an {@code Idempotency-Key}. A request with one travels as
   *     version 2 of this message (a node of an older build refuses it as newer, never runs it
   *     without its record); one without is version 1, byte for byte as before.
   */
  record TurnRequest(long transactionId, EntityId entity, TypeReference type, Turn turn,
      byte[] idempotencyRecord) implements WireMessage {
    public TurnRequest {
      idempotencyRecord = idempotencyRecord == null ? null : idempotencyRecord.clone();
    }

    /** A turn without an idempotency record. */
    public TurnRequest(long transactionId, EntityId entity, TypeReference type, Turn turn) {
      this(transactionId, entity, type, turn, null);
    }

    @Override
    public byte[] idempotencyRecord() {
      return idempotencyRecord == null ? null : idempotencyRecord.clone();
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof TurnRequest that && transactionId == that.transactionId
          && entity.equals(that.entity) && type.equals(that.type)
          && java.util.Objects.equals(turn, that.turn)
          && java.util.Arrays.equals(idempotencyRecord, that.idempotencyRecord);
    }

    @Override
    public int hashCode() {
      return java.util.Objects.hash(transactionId, entity, type, turn)
          * 31 + java.util.Arrays.hashCode(idempotencyRecord);
    }

    @Override
    public String toString() {
      return "TurnRequest[transactionId=" + transactionId + ", entity=" + entity + ", type="
          + type + ", turn=" + turn + ", idempotencyRecord="
          + (idempotencyRecord == null ? "none" : idempotencyRecord.length + " bytes") + "]";
    }
  }

  /** The entity's answer to a single-entity turn. */
  record TurnAnswer(long transactionId, EntityId entity, WireResult answer)
      implements WireMessage {}

  /**
   * A participant's node holding an in-doubt part to the coordinator's node ({@code
   * TransactionIds.nodeOf(transactionId)}): what was decided? Asked on recovery and after a
   * timeout; the answer goes to {@code askingNode}, for {@code participant} (named so that the
   * answer routes to the entity without the asking node remembering who asked).
   */
  record DecisionQuery(long transactionId, int askingNode, EntityId participant)
      implements WireMessage {}

  /** The coordinator's node's answer to a {@link DecisionQuery} of {@code participant}. */
  record DecisionAnswer(long transactionId, EntityId participant, DecisionState state)
      implements WireMessage {}

  /**
   * A node serving a client's read of an entity another node owns, to the entity's node: its
   * latest committed state ({@code timestamp} 0), or its state as of {@code timestamp} (a read
   * {@code ?at=}), answered from that node's store and object cache with a {@link ReadAnswer}
   * (docs/ARCHITECTURE.md, "Entity messages between nodes"). Changes nothing; not a turn (no actor
   * hop, no lock).
   *
   * @param readId the asking node's number for this read, unique among its reads in flight; the
   *     answer names it
   */
  record ReadRequest(long readId, EntityId entity, long timestamp) implements WireMessage {}

  /**
   * The entity's node's answer to a {@link ReadRequest}: {@link WireResult.Done} with the state
   * (which may not exist: the asker answers {@code not_found} as a local read does) and its
   * version, or the failure ({@code overloaded}, {@code unavailable}, {@code corrupt_data}...).
   */
  record ReadAnswer(long readId, EntityId entity, WireResult answer) implements WireMessage {}

  /**
   * A node asked for the cluster's status ({@code troupe status}, {@code GET /v1/cluster}) to
   * another member: its own numbers, which only it knows (docs/OPERATIONS.md, "A cluster of
   * nodes"). Changes nothing; answered with a {@link NodeStatusAnswer} to the sender's node.
   *
   * @param queryId the asking node's number for this query, unique among its queries in flight;
   *     the answer names it
   */
  record NodeStatusQuery(long queryId) implements WireMessage {}

  /**
   * A member's answer to a {@link NodeStatusQuery}: what it hosts and holds now.
   *
   * @param hostedPartitions the storage partitions it hosts (acquired, registry running),
   *     ascending
   * @param activeEntities its entity actors in memory
   * @param heapUsedBytes its JVM heap in use
   * @param heapMaxBytes its JVM's maximum heap
   * @param cacheBytes its object cache's estimated weight
   * @param httpUrl the base URL of its REST API ({@code http://host:port}), so that a client can
   *     send each request to the member that hosts its entity; null when it has none yet (its HTTP
   *     server not bound) or an older build answered (version 1 of the message has no URL)
   */
  record NodeStatusAnswer(long queryId, List<Integer> hostedPartitions, long activeEntities,
      long heapUsedBytes, long heapMaxBytes, long cacheBytes, String httpUrl)
      implements WireMessage {
    public NodeStatusAnswer {
      hostedPartitions = List.copyOf(hostedPartitions);
    }
  }

  /** What a coordinator's node knows of a transaction's decision. */
  enum DecisionState {
    /** The commit decision is durable: apply the part. */
    COMMITTED,
    /**
     * Aborted, or no decision record and no coordinator running it (presumed abort): abandon the
     * part.
     */
    ABORTED,
    /** Its coordinator is still running (collecting votes or persisting): ask again later. */
    UNDECIDED
  }
}
