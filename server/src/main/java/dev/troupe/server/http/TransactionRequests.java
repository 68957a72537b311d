package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.runtime.TransactionOutcome;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.txn.Turn;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The JSON of {@code POST /v1/transactions}: parses and validates a request completely before
 * anything runs (a malformed one is a 400 that changes nothing), and renders the answer.
 *
 * <p>Request: {@code {"mode": "auto|dynamic|planned", "ops": [...], "reads": [{"entity":
 * "Type/id"}]}}. An op names its {@code entity} and either an {@code action} with {@code args}, or
 * an {@code op}: {@code assign} (key, value), {@code increment} (key, by), {@code add} and {@code
 * remove} (key, element), {@code deleteKey} (key) or {@code delete} (the whole entity).
 *
 * <p>Two ops declare dependencies inside a transaction, so a dependency can be registered (or
 * deregistered) together with the writes it belongs with, all or nothing: {@code
 * registerDependency} with a {@code dependency} (the body of {@code POST /v1/dependencies}) and
 * {@code deregisterDependency} with the dependency's {@code id}. Both run on the dependency's
 * leader entity; their {@code entity} may be left out, and if given must be that leader.
 */
final class TransactionRequests {
  private static final Set<String> REQUEST_FIELDS = Set.of("mode", "ops", "reads");
  private static final Set<String> READ_FIELDS = Set.of("entity");
  private static final Set<String> DEPENDENCY_OPS =
      Set.of("registerDependency", "deregisterDependency");
  private static final String OP_NAMES =
      "assign, increment, add, remove, deleteKey, delete, registerDependency, deregisterDependency";

  private final RequestSupport support;

  TransactionRequests(RequestSupport support) {
    this.support = support;
  }

  TransactionRequest parse(byte[] body) {
    JsonNode tree = Json.parse(body);
    if (!tree.isObject()) {
      throw TroupeException.invalid("a transaction must be a JSON object with 'ops' and/or 'reads'");
    }
    onlyFields(tree, REQUEST_FIELDS, "a transaction");
    JsonNode modeNode = tree.get("mode");
    TransactionRequest.Mode mode = TransactionRequest.Mode.AUTO;
    if (modeNode != null) {
      String name = modeNode.isTextual() ? modeNode.asText() : String.valueOf(modeNode);
      mode = switch (name) {
        case "auto" -> TransactionRequest.Mode.AUTO;
        case "planned" -> TransactionRequest.Mode.PLANNED;
        case "dynamic" -> TransactionRequest.Mode.DYNAMIC;
        default -> throw TroupeException.invalid(
            "'mode' must be 'auto', 'dynamic' or 'planned', was " + modeNode);
      };
    }
    List<TransactionRequest.Operation> operations = new ArrayList<>();
    JsonNode ops = tree.get("ops");
    if (ops != null) {
      if (!ops.isArray()) {
        throw TroupeException.invalid("'ops' must be an array of operations");
      }
      for (int i = 0; i < ops.size(); i++) {
        operations.add(operation(ops.get(i), "ops[" + i + "]"));
      }
    }
    Set<EntityId> reads = new LinkedHashSet<>();
    JsonNode readNodes = tree.get("reads");
    if (readNodes != null) {
      if (!readNodes.isArray()) {
        throw TroupeException.invalid("'reads' must be an array of {\"entity\": \"Type/id\"}");
      }
      for (int i = 0; i < readNodes.size(); i++) {
        JsonNode read = readNodes.get(i);
        String where = "reads[" + i + "]";
        if (!read.isObject()) {
          throw TroupeException.invalid(where + " must be an object {\"entity\": \"Type/id\"}");
        }
        onlyFields(read, READ_FIELDS, where);
        reads.add(entity(read, where));
      }
    }
    if (operations.isEmpty() && reads.isEmpty()) {
      throw TroupeException.invalid("a transaction needs at least one operation or read");
    }
    return new TransactionRequest(operations, List.copyOf(reads), mode);
  }

  /**
   * One step of an interactive transaction: {@code read} takes {@code {"entity"}}, {@code write}
   * an operation with {@code "op"}, {@code action} one with {@code "action"} (the shapes of
   * {@code ops}). A read is returned with a null turn.
   */
  TransactionRequest.Operation parseStep(String step, byte[] body) {
    JsonNode node = Json.parse(body);
    if (!node.isObject()) {
      throw TroupeException.invalid("the body must be a JSON object");
    }
    return switch (step) {
      case "read" -> {
        onlyFields(node, READ_FIELDS, "a read");
        yield new TransactionRequest.Operation(entity(node, "read"), null);
      }
      case "write" -> {
        if (!node.has("op")) {
          throw TroupeException.invalid("a write needs 'op' (" + OP_NAMES
              + "); use .../action for actions");
        }
        yield operation(node, "write");
      }
      default -> {
        if (!node.has("action")) {
          throw TroupeException.invalid("an action step needs 'action' and 'args'");
        }
        yield operation(node, "action");
      }
    };
  }

  private TransactionRequest.Operation operation(JsonNode node, String where) {
    if (!node.isObject()) {
      throw TroupeException.invalid(where + " must be an object");
    }
    if (!node.has("action") && node.get("op") != null
        && DEPENDENCY_OPS.contains(node.get("op").asText())) {
      return dependencyOperation(node, node.get("op").asText(), where);
    }
    EntityId entity = entity(node, where);
    if (node.has("action")) {
      onlyFields(node, Set.of("entity", "action", "args"), where);
      String action = text(node, "action", where);
      JsonNode args = node.get("args");
      if (args == null) {
        args = Json.NODES.objectNode();
      } else if (!args.isObject()) {
        throw TroupeException.invalid(where + ".args must be a JSON object");
      }
      return new TransactionRequest.Operation(entity, new Turn.InvokeAction(action, args));
    }
    String op = text(node, "op", where);
    Turn turn = switch (op) {
      case "assign" -> {
        onlyFields(node, Set.of("entity", "op", "key", "value"), where);
        yield new Turn.AssignKeys(Map.of(key(node, where),
            support.checkValueSize(required(node, "value", where))));
      }
      case "increment" -> {
        onlyFields(node, Set.of("entity", "op", "key", "by"), where);
        JsonNode by = required(node, "by", where);
        if (!by.isIntegralNumber() || !by.canConvertToLong()) {
          throw TroupeException.invalid(where + ".by must be a 64-bit integer, was " + by);
        }
        yield new Turn.IncrementKey(key(node, where), by.asLong());
      }
      case "add" -> {
        onlyFields(node, Set.of("entity", "op", "key", "element"), where);
        yield new Turn.AddElement(key(node, where),
            support.checkValueSize(required(node, "element", where)));
      }
      case "remove" -> {
        onlyFields(node, Set.of("entity", "op", "key", "element"), where);
        yield new Turn.RemoveElement(key(node, where), required(node, "element", where));
      }
      case "deleteKey" -> {
        onlyFields(node, Set.of("entity", "op", "key"), where);
        yield new Turn.DeleteKey(key(node, where));
      }
      case "delete" -> {
        onlyFields(node, Set.of("entity", "op"), where);
        yield new Turn.DeleteEntity();
      }
      default -> throw TroupeException.invalid(where + ".op must be one of " + OP_NAMES
          + " (or give an 'action'), was '" + op + "'");
    };
    return new TransactionRequest.Operation(entity, turn);
  }

  /**
   * {@code registerDependency} ({@code dependency}) or {@code deregisterDependency} ({@code id}),
   * on the dependency's leader entity; an {@code entity} that names another entity is refused.
   */
  private TransactionRequest.Operation dependencyOperation(JsonNode node, String op,
      String where) {
    EntityId leader;
    Turn turn;
    if (op.equals("registerDependency")) {
      onlyFields(node, Set.of("entity", "op", "dependency"), where);
      Dependency dependency;
      try {
        dependency = support.dependency(required(node, "dependency", where));
      } catch (TroupeException e) {
        throw TroupeException.invalid(where + ".dependency: " + e.getMessage());
      }
      leader = dependency.leader().entity();
      turn = new Turn.RegisterDependency(dependency);
    } else {
      onlyFields(node, Set.of("entity", "op", "id"), where);
      String id = text(node, "id", where);
      Dependency.Ends ends;
      try {
        ends = support.dependencyId(id);
      } catch (TroupeException e) {
        throw TroupeException.invalid(where + ".id: " + e.getMessage());
      }
      leader = ends.leader().entity();
      turn = new Turn.DeregisterDependency(id, ends.leader().key());
    }
    if (node.has("entity")) {
      EntityId entity = entity(node, where);
      if (!entity.equals(leader)) {
        throw TroupeException.invalid(where + ".entity must be the dependency's leader " + leader
            + " (a dependency is registered and deregistered on its leader), was " + entity);
      }
    }
    return new TransactionRequest.Operation(leader, turn);
  }

  private EntityId entity(JsonNode node, String where) {
    String reference = text(node, "entity", where);
    int slash = reference.indexOf('/');
    if (slash <= 0 || slash == reference.length() - 1) {
      throw TroupeException.invalid(
          where + ".entity must be 'Type/id', was '" + reference + "'");
    }
    try {
      return support.entity(reference.substring(0, slash), reference.substring(slash + 1));
    } catch (TroupeException e) {
      throw TroupeException.invalid(where + ".entity: " + e.getMessage());
    }
  }

  private String key(JsonNode node, String where) {
    try {
      return support.checkKey(text(node, "key", where));
    } catch (TroupeException e) {
      throw TroupeException.invalid(where + ".key: " + e.getMessage());
    }
  }

  private static String text(JsonNode node, String field, String where) {
    JsonNode value = required(node, field, where);
    if (!value.isTextual()) {
      throw TroupeException.invalid(where + "." + field + " must be a string, was " + value);
    }
    return value.asText();
  }

  private static JsonNode required(JsonNode node, String field, String where) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      throw TroupeException.invalid(where + " needs '" + field + "'");
    }
    return value;
  }

  private static void onlyFields(JsonNode node, Set<String> allowed, String where) {
    Iterator<String> names = node.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!allowed.contains(name)) {
        throw TroupeException.invalid(where + " has an unknown field '" + name + "' (allowed: "
            + String.join(", ", allowed.stream().sorted().toList()) + ")");
      }
    }
  }

  /**
   * {@code POST /v1/snapshot-read}: {@code {"entities": ["Type/id", ...]}} (or {@code [{"entity":
   * "Type/id"}]}), at least one, no duplicates.
   */
  List<EntityId> parseSnapshotRead(byte[] body) {
    JsonNode tree = Json.parse(body);
    if (!tree.isObject()) {
      throw TroupeException.invalid("a snapshot read is {\"entities\": [\"Type/id\", ...]}");
    }
    onlyFields(tree, Set.of("entities"), "a snapshot read");
    JsonNode entities = tree.get("entities");
    if (entities == null || !entities.isArray() || entities.isEmpty()) {
      throw TroupeException.invalid("'entities' must be a non-empty array of \"Type/id\"");
    }
    Set<EntityId> result = new LinkedHashSet<>();
    for (int i = 0; i < entities.size(); i++) {
      JsonNode node = entities.get(i);
      String where = "entities[" + i + "]";
      EntityId entity;
      if (node.isTextual()) {
        ObjectNode wrapper = Json.NODES.objectNode();
        wrapper.set("entity", node);
        entity = entity(wrapper, where);
      } else if (node.isObject()) {
        onlyFields(node, READ_FIELDS, where);
        entity = entity(node, where);
      } else {
        throw TroupeException.invalid(where + " must be \"Type/id\" or {\"entity\": \"Type/id\"}");
      }
      if (!result.add(entity)) {
        throw TroupeException.invalid(where + " repeats " + entity);
      }
    }
    return List.copyOf(result);
  }

  /**
   * A snapshot read's answer: {@code {"timestamp", "entities": [{entity, version, exists,
   * state}]}}. Every entity is as of {@code timestamp}: the read held each entity (a read lock, or
   * a PSAC gate position) until all were read, so no write came between the newest version read and
   * any other entity's read, and later writes get later timestamps.
   */
  static ObjectNode renderSnapshot(TransactionOutcome outcome) {
    ObjectNode body = Json.NODES.objectNode();
    long timestamp = 0;
    for (TransactionOutcome.EntityOutcome entity : outcome.entities()) {
      timestamp = Math.max(timestamp, entity.version());
    }
    body.put("timestamp", timestamp);
    ArrayNode entities = body.putArray("entities");
    for (TransactionOutcome.EntityOutcome entity : outcome.entities()) {
      ObjectNode node = entities.addObject();
      node.put("entity", entity.entity().toString());
      node.put("version", entity.version());
      node.set("state", entity.state());
    }
    return body;
  }

  /** The answer: {@code {"txId", "entities": [{entity, readVersion, version, wrote}], "reads"}}. */
  static ObjectNode render(TransactionOutcome outcome, List<EntityId> reads) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("txId", outcome.transactionId());
    ArrayNode entities = body.putArray("entities");
    ArrayNode readResults = body.putArray("reads");
    for (TransactionOutcome.EntityOutcome entity : outcome.entities()) {
      ObjectNode node = entities.addObject();
      node.put("entity", entity.entity().toString());
      node.put("readVersion", entity.readVersion());
      node.put("version", entity.version());
      node.put("wrote", entity.wrote());
    }
    for (EntityId read : reads) {
      for (TransactionOutcome.EntityOutcome entity : outcome.entities()) {
        if (entity.entity().equals(read)) {
          ObjectNode node = readResults.addObject();
          node.put("entity", read.toString());
          node.put("version", entity.version());
          node.set("state", entity.state());
        }
      }
    }
    return body;
  }
}
