package dev.troupe.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.ValueEncoding;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The persisted form of a transaction part's turns, kept in a prepared record when the part's
 * operations can only be computed when it is applied (PSAC: effects meet the state left by the
 * actions that arrived before, in arrival order), so recovery can re-evaluate them.
 *
 * <p>Layout: one byte type id ({@value #TYPE_ID}), one byte format revision ({@value #REVISION}),
 * then a UTF-8 JSON array of {@code {"t": kind, ...}} objects. The enclosing prepared record
 * carries the checksum. Thread-safe (stateless).
 */
public final class TurnCodec {
  static final byte TYPE_ID = 7;
  static final byte REVISION = 1;

  private TurnCodec() {}

  public static byte[] encode(List<Turn> turns) {
    ArrayNode array = Json.NODES.arrayNode();
    for (Turn turn : turns) {
      ObjectNode node = array.addObject();
      switch (turn) {
        case Turn.AssignKeys assign -> {
          node.put("t", "assign");
          ObjectNode values = node.putObject("values");
          assign.assignments().forEach(values::set);
        }
        case Turn.DeleteKey delete -> node.put("t", "deleteKey").put("key", delete.key());
        case Turn.IncrementKey increment ->
            node.put("t", "increment").put("key", increment.key()).put("by", increment.by());
        case Turn.AddElement add -> {
          node.put("t", "add").put("key", add.key());
          node.set("element", add.element());
        }
        case Turn.RemoveElement remove -> {
          node.put("t", "remove").put("key", remove.key());
          node.set("element", remove.element());
        }
        case Turn.DeleteEntity ignored -> node.put("t", "delete");
        case Turn.DiscardHiddenValues ignored -> node.put("t", "discardHidden");
        case Turn.InvokeAction invoke -> {
          node.put("t", "action").put("action", invoke.action());
          node.set("params", invoke.params());
        }
        case Turn.RegisterDependency register -> {
          node.put("t", "register");
          node.set("dependency", register.dependency().toJson());
        }
        case Turn.DeregisterDependency deregister -> node.put("t", "deregister")
            .put("id", deregister.dependencyId()).put("key", deregister.leaderKey());
        case Turn.ApplyReplicated replicated -> {
          // One segment keeps the form of the build before batched application (which reads
          // it); several are "applyReplicatedSegments", which that build refuses, never misreads.
          if (replicated.segments().size() == 1) {
            node.put("t", "applyReplicated").put("origin", replicated.originDc());
            writeSegment(node, replicated.segments().get(0));
          } else {
            node.put("t", "applyReplicatedSegments").put("origin", replicated.originDc());
            ArrayNode segments = node.putArray("segments");
            for (Turn.ApplyReplicated.Segment segment : replicated.segments()) {
              writeSegment(segments.addObject(), segment);
            }
          }
        }
        case Turn.DeliverMessage delivery -> {
          node.put("t", "deliverMessage").put("timestamp", delivery.messageTimestamp())
              .put("index", delivery.messageIndex()).put("sender", delivery.sender().toString())
              .put("action", delivery.action());
          node.set("params", delivery.args());
          if (delivery.originDc() != Turn.DeliverMessage.LOCAL_ORIGIN) {
            node.put("origin", delivery.originDc());
          }
          if (delivery.consumedOutcome() != null) {
            node.put("consumed", delivery.consumedOutcome());
          }
        }
      }
    }
    byte[] json = Json.writeBytes(array);
    byte[] bytes = new byte[json.length + 2];
    bytes[0] = TYPE_ID;
    bytes[1] = REVISION;
    System.arraycopy(json, 0, bytes, 2, json.length);
    return bytes;
  }

  /** @throws IllegalArgumentException for anything that is not an encoding of turns */
  public static List<Turn> decode(byte[] bytes) {
    if (bytes.length < 2 || bytes[0] != TYPE_ID || bytes[1] != REVISION) {
      throw new IllegalArgumentException("not turns of format revision " + REVISION);
    }
    // Read as stored, without Json.parse's checks on client input: a record written by an
    // earlier version (which accepted integers beyond 64 bits) must still recover.
    JsonNode array;
    try {
      array = Json.MAPPER.readTree(bytes, 2, bytes.length - 2);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("turns that are not JSON: " + e.getMessage(), e);
    }
    List<Turn> turns = new ArrayList<>();
    for (JsonNode node : array) {
      String key = node.path("key").asText();
      turns.add(switch (node.path("t").asText()) {
        case "assign" -> {
          Map<String, JsonNode> values = new LinkedHashMap<>();
          Iterator<Map.Entry<String, JsonNode>> fields = node.get("values").fields();
          fields.forEachRemaining(field -> values.put(field.getKey(), field.getValue()));
          yield new Turn.AssignKeys(values);
        }
        case "deleteKey" -> new Turn.DeleteKey(key);
        case "increment" -> new Turn.IncrementKey(key, node.get("by").asLong());
        case "add" -> new Turn.AddElement(key, node.get("element"));
        case "remove" -> new Turn.RemoveElement(key, node.get("element"));
        case "delete" -> new Turn.DeleteEntity();
        case "discardHidden" -> new Turn.DiscardHiddenValues();
        case "action" -> new Turn.InvokeAction(node.get("action").asText(), node.get("params"));
        case "register" -> new Turn.RegisterDependency(
            dev.troupe.model.dependency.Dependency.fromJson(node.get("dependency")));
        case "deregister" -> new Turn.DeregisterDependency(node.get("id").asText(), key);
        case "applyReplicated" -> new Turn.ApplyReplicated(node.get("origin").asInt(),
            List.of(readSegment(node)));
        case "applyReplicatedSegments" -> {
          List<Turn.ApplyReplicated.Segment> segments = new ArrayList<>();
          for (JsonNode segment : node.get("segments")) {
            segments.add(readSegment(segment));
          }
          yield new Turn.ApplyReplicated(node.get("origin").asInt(), segments);
        }
        case "deliverMessage" -> new Turn.DeliverMessage(
            node.path("origin").asInt(Turn.DeliverMessage.LOCAL_ORIGIN),
            node.get("timestamp").asLong(),
            node.get("index").asInt(), dev.troupe.model.EntityId.parse(node.get("sender").asText()),
            node.get("action").asText(), node.get("params"),
            node.hasNonNull("consumed") ? node.get("consumed").asText() : null);
        default -> throw new IllegalArgumentException("unknown turn kind " + node.path("t"));
      });
    }
    return turns;
  }

  /**
   * A segment's timestamps and its operations in their journal encoding (tags, dependency records
   * and all), as base64 text: one encoding of operations, pinned by the storage format tests.
   */
  private static void writeSegment(ObjectNode node, Turn.ApplyReplicated.Segment segment) {
    BinaryWriter out = new BinaryWriter(64);
    out.varInt(segment.operations().size());
    for (dev.troupe.model.Operation operation : segment.operations()) {
      ValueEncoding.writeOperation(out, operation);
    }
    node.put("transaction", segment.transactionTimestamp())
        .put("stamp", segment.stampTimestamp())
        .put("operations", Base64.getEncoder().encodeToString(out.toByteArray()));
  }

  private static Turn.ApplyReplicated.Segment readSegment(JsonNode node) {
    return new Turn.ApplyReplicated.Segment(node.get("transaction").asLong(),
        node.get("stamp").asLong(), decodeOperations(node.get("operations").asText()));
  }

  private static List<dev.troupe.model.Operation> decodeOperations(String base64) {
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(base64);
    } catch (IllegalArgumentException notBase64) {
      throw new IllegalArgumentException("replicated operations that are not base64", notBase64);
    }
    BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalArgumentException(
            "replicated operations damaged at byte " + position + ": " + message, cause));
    int count = in.count();
    List<dev.troupe.model.Operation> operations = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      operations.add(ValueEncoding.readOperation(in));
    }
    in.end();
    return operations;
  }
}
