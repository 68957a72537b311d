package dev.troupe.txn.wire;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.Frames;
import dev.troupe.model.codec.ValueEncoding;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.entity.LockTable;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import dev.troupe.txn.wire.Envelope.Destination;
import dev.troupe.txn.wire.WireMessage.Acknowledgement;
import dev.troupe.txn.wire.WireMessage.Decision;
import dev.troupe.txn.wire.WireMessage.DecisionAnswer;
import dev.troupe.txn.wire.WireMessage.DecisionQuery;
import dev.troupe.txn.wire.WireMessage.DecisionState;
import dev.troupe.txn.wire.WireMessage.ForwardsChanged;
import dev.troupe.txn.wire.WireMessage.NodeStatusAnswer;
import dev.troupe.txn.wire.WireMessage.NodeStatusQuery;
import dev.troupe.txn.wire.WireMessage.Prepare;
import dev.troupe.txn.wire.WireMessage.ReadAnswer;
import dev.troupe.txn.wire.WireMessage.ReadRequest;
import dev.troupe.txn.wire.WireMessage.StepAnswer;
import dev.troupe.txn.wire.WireMessage.StepRequest;
import dev.troupe.txn.wire.WireMessage.TurnAnswer;
import dev.troupe.txn.wire.WireMessage.TurnRequest;
import dev.troupe.txn.wire.WireMessage.Vote;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The binary form of an {@link Envelope}: what a transport between nodes carries. Like the
 * journal's records ({@code storage}'s {@code Codec}), with whose value encoding it shares
 * ({@link ValueEncoding}): no Java serialization, and a format that is ours and stable.
 *
 * <p><b>Frame.</b> {@code type id (1 byte), version (1 byte), length (4 bytes, big-endian: the
 * bytes of envelope and fields), sender node (varint), destination (1 byte kind, then the entity
 * or the node id), the message's fields, CRC32C (4 bytes, big-endian) of everything before it}.
 * Decoding checks the length, then the checksum, then the type id and version, before it reads a
 * field, so a frame flipped in any one byte (CRC32C detects every burst of up to 32 bits), cut
 * short or extended is refused ({@link CorruptFrameException}), never decoded into a different
 * message. A type id this build does not know, or a version newer than it reads, is refused with
 * that reason: a message from a newer node is dropped and reported, never misread.
 *
 * <p><b>Versions.</b> Each message type has its own version ({@link #VERSIONS}). A change to a
 * message's fields takes a new version, and the decoder keeps reading the older ones for as long as
 * a cluster may run mixed builds; the fixed byte vectors of {@code WireFormatTest} fail on any
 * change that forgets this. Maps are written in key order, so equal messages have equal bytes.
 *
 * <p>Thread-safe (stateless).
 */
public final class WireCodec {
  static final byte PREPARE = 1;
  static final byte VOTE = 2;
  static final byte FORWARDS_CHANGED = 3;
  static final byte DECISION = 4;
  static final byte ACKNOWLEDGEMENT = 5;
  static final byte STEP_REQUEST = 6;
  static final byte STEP_ANSWER = 7;
  static final byte TURN_REQUEST = 8;
  static final byte TURN_ANSWER = 9;
  static final byte DECISION_QUERY = 10;
  static final byte DECISION_ANSWER = 11;
  // Added for reads served by an entity's node (issue 18): new type ids, so no earlier message's
  // bytes change; a build that does not know them refuses them as an unknown type.
  static final byte READ_REQUEST = 12;
  static final byte READ_ANSWER = 13;
  // The cluster's status asked of each member (issue 18, operations): new type ids likewise.
  static final byte NODE_STATUS_QUERY = 14;
  static final byte NODE_STATUS_ANSWER = 15;

  /**
   * The newest version this build reads (and writes) of each type id, by index. A turn request
   * is written as version 1 without an idempotency record, byte for byte as before, and as
   * version 2 with one ({@link #versionOf}); likewise a node status answer is written as version 1
   * without the member's HTTP URL and as version 2 with one.
   */
  static final byte[] VERSIONS = {0, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2};

  private static final byte TO_ENTITY = 1;
  private static final byte TO_NODE = 2;

  private static final byte COMMITTED = 1;
  private static final byte ABORTED = 2;
  private static final byte UNDECIDED = 3;

  private static final byte DONE = 1;
  private static final byte FAILED = 2;
  /**
   * A {@link WireResult.Done} whose entity is absent after the turn (deleted, or never written):
   * its state is null, so it is written without one. Part of version 1 of every message with a
   * result (the format had not been released when the simulator's first deletes crossed a node).
   */
  private static final byte DONE_ABSENT = 3;

  private static final byte ASSIGN_KEYS = 1;
  private static final byte DELETE_KEY = 2;
  private static final byte INCREMENT_KEY = 3;
  private static final byte ADD_ELEMENT = 4;
  private static final byte REMOVE_ELEMENT = 5;
  private static final byte DELETE_ENTITY = 6;
  private static final byte DISCARD_HIDDEN_VALUES = 7;
  private static final byte INVOKE_ACTION = 8;
  private static final byte REGISTER_DEPENDENCY = 9;
  private static final byte DEREGISTER_DEPENDENCY = 10;
  // Added without a new message version: no earlier message's bytes change, and a build that
  // does not know the kind refuses the message (unknown turn kind), never misreads it.
  private static final byte APPLY_REPLICATED = 11;
  private static final byte DELIVER_MESSAGE = 12;
  // A delivery of another origin's message (a receiver homed here), or a consumed one: kind 12
  // after the origin and the consumed outcome, so kind 12's bytes stay as they were.
  private static final byte DELIVER_MESSAGE_FROM = 13;
  // A replica application of several segments (batched application). One segment is still
  // written as APPLY_REPLICATED, byte for byte as before, so a node of the previous build reads
  // every message that build could have sent; one that does not know this kind refuses it.
  private static final byte APPLY_REPLICATED_SEGMENTS = 14;

  private static final byte LEADER_CHANGED = 1;
  private static final byte LEADER_DELETED = 2;
  private static final byte FOLLOWER_DELETED = 3;
  private static final byte REGISTERED = 4;
  private static final byte REGISTRATION_REQUESTED = 5;
  private static final byte DEREGISTERED = 6;
  private static final byte PROBE = 7;

  private WireCodec() {}

  /** The type id a message travels under. */
  static byte typeId(WireMessage message) {
    return switch (message) {
      case Prepare ignored -> PREPARE;
      case Vote ignored -> VOTE;
      case ForwardsChanged ignored -> FORWARDS_CHANGED;
      case Decision ignored -> DECISION;
      case Acknowledgement ignored -> ACKNOWLEDGEMENT;
      case StepRequest ignored -> STEP_REQUEST;
      case StepAnswer ignored -> STEP_ANSWER;
      case TurnRequest ignored -> TURN_REQUEST;
      case TurnAnswer ignored -> TURN_ANSWER;
      case DecisionQuery ignored -> DECISION_QUERY;
      case DecisionAnswer ignored -> DECISION_ANSWER;
      case ReadRequest ignored -> READ_REQUEST;
      case ReadAnswer ignored -> READ_ANSWER;
      case NodeStatusQuery ignored -> NODE_STATUS_QUERY;
      case NodeStatusAnswer ignored -> NODE_STATUS_ANSWER;
    };
  }

  // ---------------------------------------------------------------- frames

  /** The version {@code message} is written as (see {@link #VERSIONS}). */
  static byte versionOf(WireMessage message) {
    if (message instanceof TurnRequest turn && turn.idempotencyRecord() == null) {
      return 1;
    }
    if (message instanceof NodeStatusAnswer answer && answer.httpUrl() == null) {
      return 1;
    }
    return VERSIONS[typeId(message)];
  }

  public static byte[] encode(Envelope envelope) {
    byte typeId = typeId(envelope.message());
    BinaryWriter out = Frames.begin(typeId, versionOf(envelope.message()), 96);
    out.varInt(envelope.senderNode());
    switch (envelope.destination()) {
      case Destination.ToEntity to -> {
        out.type(TO_ENTITY);
        ValueEncoding.writeEntity(out, to.entity());
      }
      case Destination.ToNode to -> {
        out.type(TO_NODE);
        out.varInt(to.nodeId());
      }
    }
    writeMessage(out, envelope.message());
    return Frames.seal(out);
  }

  /**
   * @throws CorruptFrameException for anything that is not a frame this build reads, with what
   *     is wrong
   */
  public static Envelope decode(byte[] bytes) {
    byte typeId = Frames.check(bytes, VERSIONS, "message", CorruptFrameException::new);
    int limit = Frames.fieldsEnd(bytes);
    BinaryReader in = new BinaryReader(bytes, Frames.HEADER_BYTES, limit,
        (position, message, cause) -> new CorruptFrameException(Damage.MALFORMED,
            "message type " + typeId + " at byte " + position + ": " + message, cause));
    try {
      int sender = in.varInt();
      byte kind = in.type();
      Destination destination = switch (kind) {
        case TO_ENTITY -> new Destination.ToEntity(ValueEncoding.readEntity(in));
        case TO_NODE -> new Destination.ToNode(in.varInt());
        default -> throw in.corrupt("unknown destination kind " + kind, null);
      };
      WireMessage message = readMessage(in, typeId, bytes[1]);
      in.end();
      return new Envelope(sender, destination, message);
    } catch (CorruptFrameException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- messages

  private static void writeMessage(BinaryWriter out, WireMessage message) {
    switch (message) {
      case Prepare prepare -> {
        out.fixedLong(prepare.transactionId());
        out.fixedLong(prepare.startTimestamp());
        ValueEncoding.writeEntity(out, prepare.participant());
        writeType(out, prepare.type());
        writeTurns(out, prepare.turns());
        out.flag(prepare.readsState());
        writeForwards(out, prepare.forwards());
        Map<String, LockTable.Mode> reserved = new TreeMap<>(prepare.reserved());
        out.varInt(reserved.size());
        reserved.forEach((key, mode) -> {
          out.string(key);
          out.type(mode == LockTable.Mode.WRITE ? (byte) 1 : (byte) 0);
        });
        out.flag(prepare.planned());
      }
      case Vote vote -> {
        out.fixedLong(vote.transactionId());
        ValueEncoding.writeEntity(out, vote.participant());
        out.varInt(vote.round());
        writeResult(out, vote.vote());
      }
      case ForwardsChanged changed -> {
        out.fixedLong(changed.transactionId());
        ValueEncoding.writeEntity(out, changed.participant());
        out.varInt(changed.round());
        writeForwards(out, changed.forwards());
      }
      case Decision decision -> {
        out.fixedLong(decision.transactionId());
        ValueEncoding.writeEntity(out, decision.participant());
        out.flag(decision.commit());
      }
      case Acknowledgement acknowledgement -> {
        out.fixedLong(acknowledgement.transactionId());
        ValueEncoding.writeEntity(out, acknowledgement.participant());
        writeResult(out, acknowledgement.acknowledgement());
      }
      case StepRequest step -> {
        out.fixedLong(step.transactionId());
        out.fixedLong(step.startTimestamp());
        ValueEncoding.writeEntity(out, step.entity());
        writeType(out, step.type());
        out.flag(step.turn() != null);
        if (step.turn() != null) {
          writeTurn(out, step.turn());
        }
      }
      case StepAnswer answer -> {
        out.fixedLong(answer.transactionId());
        ValueEncoding.writeEntity(out, answer.entity());
        writeResult(out, answer.answer());
      }
      case TurnRequest turn -> {
        out.fixedLong(turn.transactionId());
        ValueEncoding.writeEntity(out, turn.entity());
        writeType(out, turn.type());
        writeTurn(out, turn.turn());
        byte[] idempotencyRecord = turn.idempotencyRecord();
        if (idempotencyRecord != null) {
          out.bytes(idempotencyRecord); // version 2 only
        }
      }
      case TurnAnswer answer -> {
        out.fixedLong(answer.transactionId());
        ValueEncoding.writeEntity(out, answer.entity());
        writeResult(out, answer.answer());
      }
      case DecisionQuery query -> {
        out.fixedLong(query.transactionId());
        out.varInt(query.askingNode());
        ValueEncoding.writeEntity(out, query.participant());
      }
      case DecisionAnswer answer -> {
        out.fixedLong(answer.transactionId());
        ValueEncoding.writeEntity(out, answer.participant());
        out.type(switch (answer.state()) {
          case COMMITTED -> COMMITTED;
          case ABORTED -> ABORTED;
          case UNDECIDED -> UNDECIDED;
        });
      }
      case ReadRequest read -> {
        out.fixedLong(read.readId());
        ValueEncoding.writeEntity(out, read.entity());
        out.fixedLong(read.timestamp());
      }
      case ReadAnswer answer -> {
        out.fixedLong(answer.readId());
        ValueEncoding.writeEntity(out, answer.entity());
        writeResult(out, answer.answer());
      }
      case NodeStatusQuery query -> out.fixedLong(query.queryId());
      case NodeStatusAnswer answer -> {
        out.fixedLong(answer.queryId());
        out.varInt(answer.hostedPartitions().size());
        for (int partition : answer.hostedPartitions()) {
          out.varInt(partition);
        }
        out.varLong(answer.activeEntities());
        out.varLong(answer.heapUsedBytes());
        out.varLong(answer.heapMaxBytes());
        out.varLong(answer.cacheBytes());
        if (answer.httpUrl() != null) {
          out.string(answer.httpUrl()); // version 2 only
        }
      }
    }
  }

  private static WireMessage readMessage(BinaryReader in, byte typeId, byte version) {
    return switch (typeId) {
      case PREPARE -> {
        long transactionId = in.fixedLong();
        long startTimestamp = in.fixedLong();
        EntityId participant = ValueEncoding.readEntity(in);
        TypeReference type = readType(in);
        List<Turn> turns = readTurns(in);
        boolean readsState = in.flag();
        List<Forward> forwards = readForwards(in);
        int count = in.count();
        Map<String, LockTable.Mode> reserved = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
          String key = in.string();
          byte mode = in.type();
          if (mode != 0 && mode != 1) {
            throw in.corrupt("bad lock mode " + mode, null);
          }
          reserved.put(key, mode == 1 ? LockTable.Mode.WRITE : LockTable.Mode.READ);
        }
        yield new Prepare(transactionId, startTimestamp, participant, type, turns, readsState,
            forwards, reserved, in.flag());
      }
      case VOTE -> new Vote(in.fixedLong(), ValueEncoding.readEntity(in), in.varInt(),
          readResult(in));
      case FORWARDS_CHANGED -> new ForwardsChanged(in.fixedLong(), ValueEncoding.readEntity(in),
          in.varInt(), readForwards(in));
      case DECISION -> new Decision(in.fixedLong(), ValueEncoding.readEntity(in), in.flag());
      case ACKNOWLEDGEMENT ->
          new Acknowledgement(in.fixedLong(), ValueEncoding.readEntity(in), readResult(in));
      case STEP_REQUEST -> {
        long transactionId = in.fixedLong();
        long startTimestamp = in.fixedLong();
        EntityId entity = ValueEncoding.readEntity(in);
        TypeReference type = readType(in);
        Turn turn = in.flag() ? readTurn(in) : null;
        yield new StepRequest(transactionId, startTimestamp, entity, type, turn);
      }
      case STEP_ANSWER ->
          new StepAnswer(in.fixedLong(), ValueEncoding.readEntity(in), readResult(in));
      case TURN_REQUEST -> new TurnRequest(in.fixedLong(), ValueEncoding.readEntity(in),
          readType(in), readTurn(in), version >= 2 ? in.bytes() : null);
      case TURN_ANSWER ->
          new TurnAnswer(in.fixedLong(), ValueEncoding.readEntity(in), readResult(in));
      case DECISION_QUERY ->
          new DecisionQuery(in.fixedLong(), in.varInt(), ValueEncoding.readEntity(in));
      case DECISION_ANSWER -> {
        long transactionId = in.fixedLong();
        EntityId participant = ValueEncoding.readEntity(in);
        byte state = in.type();
        yield new DecisionAnswer(transactionId, participant, switch (state) {
          case COMMITTED -> DecisionState.COMMITTED;
          case ABORTED -> DecisionState.ABORTED;
          case UNDECIDED -> DecisionState.UNDECIDED;
          default -> throw in.corrupt("unknown decision state " + state, null);
        });
      }
      case READ_REQUEST ->
          new ReadRequest(in.fixedLong(), ValueEncoding.readEntity(in), in.fixedLong());
      case READ_ANSWER ->
          new ReadAnswer(in.fixedLong(), ValueEncoding.readEntity(in), readResult(in));
      case NODE_STATUS_QUERY -> new NodeStatusQuery(in.fixedLong());
      case NODE_STATUS_ANSWER -> {
        long queryId = in.fixedLong();
        int count = in.count();
        List<Integer> partitions = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          int partition = in.varInt();
          if (!partitions.isEmpty() && partition <= partitions.getLast()) {
            throw in.corrupt("hosted partitions out of order", null);
          }
          partitions.add(partition);
        }
        yield new NodeStatusAnswer(queryId, partitions, in.varLong(), in.varLong(),
            in.varLong(), in.varLong(), version >= 2 ? in.string() : null);
      }
      default -> throw in.corrupt("unknown message type " + typeId, null);
    };
  }

  private static void writeType(BinaryWriter out, TypeReference type) {
    out.string(type.name());
    out.fixedLong(type.version());
  }

  private static TypeReference readType(BinaryReader in) {
    return new TypeReference(in.string(), in.fixedLong());
  }

  // ---------------------------------------------------------------- results

  private static void writeResult(BinaryWriter out, WireResult result) {
    switch (result) {
      case WireResult.Done done -> {
        out.type(done.state() == null ? DONE_ABSENT : DONE);
        out.fixedLong(done.version());
        if (done.state() != null) {
          ValueEncoding.writeState(out, done.state());
        }
        out.flag(done.wrote());
        out.fixedLong(done.readVersion());
        writeForwards(out, done.forwards());
        writeDepths(out, done.deepestUpstream());
        writeDepths(out, done.deepestDownstream());
      }
      case WireResult.Failed failed -> {
        out.type(FAILED);
        out.string(failed.code().wireName());
        out.flag(failed.reason() != null);
        if (failed.reason() != null) {
          out.string(failed.reason());
        }
        out.string(failed.message());
      }
    }
  }

  private static WireResult readResult(BinaryReader in) {
    byte kind = in.type();
    return switch (kind) {
      case DONE -> new WireResult.Done(in.fixedLong(), ValueEncoding.readState(in), in.flag(),
          in.fixedLong(), readForwards(in), readDepths(in), readDepths(in));
      case DONE_ABSENT -> new WireResult.Done(in.fixedLong(), null, in.flag(),
          in.fixedLong(), readForwards(in), readDepths(in), readDepths(in));
      case FAILED -> {
        String codeName = in.string();
        ErrorCode code = null;
        for (ErrorCode candidate : ErrorCode.values()) {
          if (candidate.wireName().equals(codeName)) {
            code = candidate;
          }
        }
        if (code == null) {
          throw in.corrupt("unknown error code " + codeName, null);
        }
        String reason = in.flag() ? in.string() : null;
        yield new WireResult.Failed(code, reason, in.string());
      }
      default -> throw in.corrupt("unknown result kind " + kind, null);
    };
  }

  private static void writeDepths(BinaryWriter out, Map<String, Integer> depths) {
    Map<String, Integer> sorted = new TreeMap<>(depths);
    out.varInt(sorted.size());
    sorted.forEach((id, depth) -> {
      out.string(id);
      out.varInt(depth);
    });
  }

  private static Map<String, Integer> readDepths(BinaryReader in) {
    int count = in.count();
    Map<String, Integer> depths = new HashMap<>();
    for (int i = 0; i < count; i++) {
      depths.put(in.string(), in.varInt());
    }
    return depths;
  }

  // ---------------------------------------------------------------- turns

  private static void writeTurns(BinaryWriter out, List<Turn> turns) {
    out.varInt(turns.size());
    for (Turn turn : turns) {
      writeTurn(out, turn);
    }
  }

  private static List<Turn> readTurns(BinaryReader in) {
    int count = in.count();
    List<Turn> turns = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      turns.add(readTurn(in));
    }
    return turns;
  }

  private static void writeTurn(BinaryWriter out, Turn turn) {
    switch (turn) {
      case Turn.AssignKeys assign -> {
        out.type(ASSIGN_KEYS);
        Map<String, JsonNode> sorted = new TreeMap<>(assign.assignments());
        out.varInt(sorted.size());
        sorted.forEach((key, value) -> {
          out.string(key);
          out.json(value);
        });
      }
      case Turn.DeleteKey delete -> {
        out.type(DELETE_KEY);
        out.string(delete.key());
      }
      case Turn.IncrementKey increment -> {
        out.type(INCREMENT_KEY);
        out.string(increment.key());
        out.signedVarLong(increment.by());
      }
      case Turn.AddElement add -> {
        out.type(ADD_ELEMENT);
        out.string(add.key());
        out.json(add.element());
      }
      case Turn.RemoveElement remove -> {
        out.type(REMOVE_ELEMENT);
        out.string(remove.key());
        out.json(remove.element());
      }
      case Turn.DeleteEntity ignored -> out.type(DELETE_ENTITY);
      case Turn.DiscardHiddenValues ignored -> out.type(DISCARD_HIDDEN_VALUES);
      case Turn.InvokeAction invoke -> {
        out.type(INVOKE_ACTION);
        out.string(invoke.action());
        out.optionalJson(invoke.params());
      }
      case Turn.RegisterDependency register -> {
        out.type(REGISTER_DEPENDENCY);
        ValueEncoding.writeDependency(out, register.dependency());
      }
      case Turn.DeregisterDependency deregister -> {
        out.type(DEREGISTER_DEPENDENCY);
        out.string(deregister.dependencyId());
        out.string(deregister.leaderKey());
      }
      case Turn.ApplyReplicated replicated -> {
        if (replicated.segments().size() == 1) {
          out.type(APPLY_REPLICATED);
          out.varInt(replicated.originDc());
          writeSegment(out, replicated.segments().get(0));
        } else {
          out.type(APPLY_REPLICATED_SEGMENTS);
          out.varInt(replicated.originDc());
          out.varInt(replicated.segments().size());
          for (Turn.ApplyReplicated.Segment segment : replicated.segments()) {
            writeSegment(out, segment);
          }
        }
      }
      case Turn.DeliverMessage delivery -> {
        boolean local = delivery.originDc() == Turn.DeliverMessage.LOCAL_ORIGIN
            && delivery.consumedOutcome() == null;
        if (local) {
          out.type(DELIVER_MESSAGE);
        } else {
          out.type(DELIVER_MESSAGE_FROM);
          out.varInt(delivery.originDc() + 1); // LOCAL_ORIGIN (-1) as 0
          out.flag(delivery.consumedOutcome() != null);
          if (delivery.consumedOutcome() != null) {
            out.string(delivery.consumedOutcome());
          }
        }
        out.fixedLong(delivery.messageTimestamp());
        out.varInt(delivery.messageIndex());
        ValueEncoding.writeEntity(out, delivery.sender());
        out.string(delivery.action());
        out.optionalJson(delivery.args());
      }
    }
  }

  private static Turn readTurn(BinaryReader in) {
    byte kind = in.type();
    return switch (kind) {
      case ASSIGN_KEYS -> {
        int count = in.count();
        Map<String, JsonNode> assignments = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
          assignments.put(in.string(), in.json());
        }
        yield new Turn.AssignKeys(assignments);
      }
      case DELETE_KEY -> new Turn.DeleteKey(in.string());
      case INCREMENT_KEY -> new Turn.IncrementKey(in.string(), in.signedVarLong());
      case ADD_ELEMENT -> new Turn.AddElement(in.string(), in.json());
      case REMOVE_ELEMENT -> new Turn.RemoveElement(in.string(), in.json());
      case DELETE_ENTITY -> new Turn.DeleteEntity();
      case DISCARD_HIDDEN_VALUES -> new Turn.DiscardHiddenValues();
      case INVOKE_ACTION -> new Turn.InvokeAction(in.string(), in.optionalJson());
      case REGISTER_DEPENDENCY -> new Turn.RegisterDependency(ValueEncoding.readDependency(in));
      case DEREGISTER_DEPENDENCY -> new Turn.DeregisterDependency(in.string(), in.string());
      case APPLY_REPLICATED -> {
        int originDc = in.varInt();
        yield new Turn.ApplyReplicated(originDc, List.of(readSegment(in)));
      }
      case APPLY_REPLICATED_SEGMENTS -> {
        int originDc = in.varInt();
        int count = in.count();
        List<Turn.ApplyReplicated.Segment> segments = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          segments.add(readSegment(in));
        }
        if (segments.isEmpty()) {
          throw in.corrupt("a replica application with no segment", null);
        }
        for (int i = 1; i < segments.size(); i++) {
          if (segments.get(i - 1).transactionTimestamp()
              >= segments.get(i).transactionTimestamp()) {
            throw in.corrupt("replica application segments out of order", null);
          }
        }
        yield new Turn.ApplyReplicated(originDc, segments);
      }
      case DELIVER_MESSAGE -> new Turn.DeliverMessage(in.fixedLong(), in.varInt(),
          ValueEncoding.readEntity(in), in.string(), in.optionalJson());
      case DELIVER_MESSAGE_FROM -> {
        int origin = in.varInt() - 1;
        String consumedOutcome = in.flag() ? in.string() : null;
        yield new Turn.DeliverMessage(origin, in.fixedLong(), in.varInt(),
            ValueEncoding.readEntity(in), in.string(), in.optionalJson(), consumedOutcome);
      }
      default -> throw in.corrupt("unknown turn kind " + kind, null);
    };
  }

  private static void writeSegment(BinaryWriter out, Turn.ApplyReplicated.Segment segment) {
    out.fixedLong(segment.transactionTimestamp());
    out.fixedLong(segment.stampTimestamp());
    out.varInt(segment.operations().size());
    for (dev.troupe.model.Operation operation : segment.operations()) {
      ValueEncoding.writeOperation(out, operation);
    }
  }

  private static Turn.ApplyReplicated.Segment readSegment(BinaryReader in) {
    long transactionTimestamp = in.fixedLong();
    long stampTimestamp = in.fixedLong();
    int count = in.count();
    List<dev.troupe.model.Operation> operations = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      operations.add(ValueEncoding.readOperation(in));
    }
    return new Turn.ApplyReplicated.Segment(transactionTimestamp, stampTimestamp, operations);
  }

  // ---------------------------------------------------------------- forwards

  private static void writeForwards(BinaryWriter out, List<Forward> forwards) {
    out.varInt(forwards.size());
    for (Forward forward : forwards) {
      writeForward(out, forward);
    }
  }

  private static List<Forward> readForwards(BinaryReader in) {
    int count = in.count();
    List<Forward> forwards = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      forwards.add(readForward(in));
    }
    return forwards;
  }

  private static void writeForward(BinaryWriter out, Forward forward) {
    switch (forward) {
      case Forward.LeaderChanged changed -> {
        out.type(LEADER_CHANGED);
        ValueEncoding.writeDependency(out, changed.dependency());
        out.optionalJson(changed.oldValue());
        out.optionalJson(changed.newValue());
      }
      case Forward.LeaderDeleted deleted -> {
        out.type(LEADER_DELETED);
        ValueEncoding.writeDependency(out, deleted.dependency());
      }
      case Forward.FollowerDeleted deleted -> {
        out.type(FOLLOWER_DELETED);
        ValueEncoding.writeDependency(out, deleted.dependency());
      }
      case Forward.Registered registered -> {
        out.type(REGISTERED);
        ValueEncoding.writeDependency(out, registered.dependency());
        out.optionalJson(registered.leaderValue());
      }
      case Forward.RegistrationRequested requested -> {
        out.type(REGISTRATION_REQUESTED);
        ValueEncoding.writeDependency(out, requested.dependency());
      }
      case Forward.Deregistered deregistered -> {
        out.type(DEREGISTERED);
        ValueEncoding.writeDependency(out, deregistered.dependency());
      }
      case Forward.Probe probe -> {
        out.type(PROBE);
        ValueEncoding.writeDependency(out, probe.registered());
        ValueEncoding.writeEntity(out, probe.at().entity());
        out.string(probe.at().key());
        out.type(probe.direction() == Forward.Direction.UPSTREAM ? (byte) 0 : (byte) 1);
        out.varInt(probe.depth());
      }
    }
  }

  private static Forward readForward(BinaryReader in) {
    byte kind = in.type();
    return switch (kind) {
      case LEADER_CHANGED -> new Forward.LeaderChanged(ValueEncoding.readDependency(in),
          in.optionalJson(), in.optionalJson());
      case LEADER_DELETED -> new Forward.LeaderDeleted(ValueEncoding.readDependency(in));
      case FOLLOWER_DELETED -> new Forward.FollowerDeleted(ValueEncoding.readDependency(in));
      case REGISTERED ->
          new Forward.Registered(ValueEncoding.readDependency(in), in.optionalJson());
      case REGISTRATION_REQUESTED ->
          new Forward.RegistrationRequested(ValueEncoding.readDependency(in));
      case DEREGISTERED -> new Forward.Deregistered(ValueEncoding.readDependency(in));
      case PROBE -> {
        Dependency registered = ValueEncoding.readDependency(in);
        KeyReference at = new KeyReference(ValueEncoding.readEntity(in), in.string());
        byte direction = in.type();
        if (direction != 0 && direction != 1) {
          throw in.corrupt("bad probe direction " + direction, null);
        }
        yield new Forward.Probe(registered, at,
            direction == 0 ? Forward.Direction.UPSTREAM : Forward.Direction.DOWNSTREAM,
            in.varInt());
      }
      default -> throw in.corrupt("unknown forward kind " + kind, null);
    };
  }
}
