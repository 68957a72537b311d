package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Every operation of the API as a {@link Call}: its request's shape and how its answer is read.
 * Shared by both faces of the client, so they cannot differ in what they send or read. Pure.
 */
final class Calls {
  static final String JSON = "application/json";
  static final String YAML = "application/yaml";

  private Calls() {}

  /** A path segment, percent-encoded whole (ids and keys may hold '/', '[', spaces, ...). */
  static String segment(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static String entityPath(String type, String id) {
    return "/v1/entities/" + segment(type) + "/" + segment(id);
  }

  private static String keyPath(String type, String id, String key) {
    return entityPath(type, id) + "/keys/" + segment(key);
  }

  private static <T> Call<T> call(String method, String path, Safety safety, JsonNode body,
      Call.Reader<T> reader) {
    return new Call<>(method, path, List.of(), body == null ? null : Wire.bytes(body), JSON,
        safety, reader);
  }

  // ---- Entities, keys and actions ----

  static Call<EntityState> getEntity(String type, String id, Long at) {
    return getEntity(type, id, at, null);
  }

  /**
   * The entity's state, or with {@code projection} only the keys it names ({@code key=K},
   * repeated; empty: {@code state=none}); null: the whole state.
   */
  static Call<EntityState> getEntity(String type, String id, Long at, List<String> projection) {
    List<Map.Entry<String, String>> query = new ArrayList<>();
    if (at != null) {
      query.add(Map.entry("at", Long.toString(at)));
    }
    query.addAll(projection(projection));
    return new Call<>("GET", entityPath(type, id), List.copyOf(query), null, JSON, Safety.SAFE,
        (body, replayed) -> EntityState.from(body));
  }

  /** The query of a projection: a {@code key} per key, {@code state=none} for none. */
  static List<Map.Entry<String, String>> projection(List<String> keys) {
    if (keys == null) {
      return List.of();
    }
    if (keys.isEmpty()) {
      return List.of(Map.entry("state", "none"));
    }
    return keys.stream().map(key -> Map.entry("key", key)).toList();
  }

  /** A write's call answering only the keys {@code projection} names (null: as it is). */
  static Call<Written> projected(Call<Written> call, List<String> projection) {
    return projection == null ? call : new Call<>(call.method(), call.path(),
        projection(projection), call.body(), call.contentType(), call.safety(), call.reader());
  }

  static Call<Written> patch(String type, String id, Map<String, ?> values) {
    return call("PATCH", entityPath(type, id), Safety.KEYED, Wire.object(values), Written::from);
  }

  static Call<Written> patch(String type, String id, ObjectNode values) {
    return call("PATCH", entityPath(type, id), Safety.KEYED, values, Written::from);
  }

  static Call<Written> deleteEntity(String type, String id) {
    return call("DELETE", entityPath(type, id), Safety.KEYED, null, Written::from);
  }

  static Call<JsonNode> getKey(String type, String id, String key) {
    return call("GET", keyPath(type, id, key), Safety.SAFE, null,
        (body, replayed) -> {
          // A key may hold JSON null: only a missing "value" is an unexpected answer.
          if (!body.has("value")) {
            throw new IllegalStateException("the answer has no \"value\"");
          }
          return body.get("value");
        });
  }

  static Call<Written> putKey(String type, String id, String key, Object value) {
    // A JSON null is a value too: the body is always sent.
    return call("PUT", keyPath(type, id, key), Safety.KEYED, Wire.tree(value), Written::from);
  }

  static Call<Written> deleteKey(String type, String id, String key) {
    return call("DELETE", keyPath(type, id, key), Safety.KEYED, null, Written::from);
  }

  static Call<Written> increment(String type, String id, String key, long by) {
    return call("POST", keyPath(type, id, key) + "/increment", Safety.KEYED,
        Wire.NODES.objectNode().put("by", by), Written::from);
  }

  static Call<Written> addElement(String type, String id, String key, Object element) {
    ObjectNode body = Wire.NODES.objectNode();
    body.set("element", Wire.tree(element));
    return call("POST", keyPath(type, id, key) + "/add", Safety.KEYED, body, Written::from);
  }

  static Call<Written> removeElement(String type, String id, String key, Object element) {
    ObjectNode body = Wire.NODES.objectNode();
    body.set("element", Wire.tree(element));
    return call("POST", keyPath(type, id, key) + "/remove", Safety.KEYED, body, Written::from);
  }

  static Call<Written> act(String type, String id, String action, Map<String, ?> args) {
    return call("POST", entityPath(type, id) + "/actions/" + segment(action), Safety.KEYED,
        Wire.object(args == null ? Map.of() : args), Written::from);
  }

  // ---- Listing ----

  static Call<EntityPage> listEntities(String type, ListQuery query) {
    return new Call<>("GET", "/v1/entities/" + segment(type), Call.parameters(query.parameters()),
        null, JSON,
        Safety.SAFE, (body, replayed) -> EntityPage.from(body));
  }

  // ---- Types ----

  static Call<List<ObjectNode>> listTypes() {
    return call("GET", "/v1/types", Safety.SAFE, null, (body, replayed) -> {
      List<ObjectNode> types = new ArrayList<>();
      for (JsonNode type : Wire.required(body, "types")) {
        types.add((ObjectNode) type);
      }
      return List.copyOf(types);
    });
  }

  static Call<ObjectNode> getType(String type) {
    return call("GET", "/v1/types/" + segment(type), Safety.SAFE, null,
        (body, replayed) -> (ObjectNode) body);
  }

  /** A spec as JSON ({@code spec} a JsonNode or a Map) or as YAML text ({@code spec} a String). */
  static Call<ObjectNode> putType(String type, Object spec, String migration) {
    Map<String, String> query = migration == null ? Map.of() : Map.of("migration", migration);
    boolean yaml = spec instanceof String;
    byte[] body = yaml ? ((String) spec).getBytes(StandardCharsets.UTF_8)
        : Wire.bytes(Wire.object(spec));
    // Declaring a type is idempotent by nature: declaring it twice declares it once.
    return new Call<>("PUT", "/v1/types/" + segment(type), Call.parameters(query), body,
        yaml ? YAML : JSON,
        Safety.SAFE, (answer, replayed) -> (ObjectNode) answer);
  }

  // ---- Transactions and snapshot reads ----

  static Call<TransactionResult> transact(List<Operation> operations, List<String> reads,
      String mode) {
    ObjectNode body = Wire.NODES.objectNode();
    ArrayNode ops = body.putArray("ops");
    operations.forEach(operation -> ops.add(operation.json()));
    ArrayNode read = body.putArray("reads");
    reads.forEach(entity -> read.addObject().put("entity", entity));
    if (mode != null) {
      body.put("mode", mode);
    }
    return call("POST", "/v1/transactions", Safety.KEYED, body, TransactionResult::from);
  }

  static Call<SnapshotRead> snapshotRead(List<String> entities) {
    ObjectNode body = Wire.NODES.objectNode();
    ArrayNode read = body.putArray("entities");
    entities.forEach(entity -> read.addObject().put("entity", entity));
    // A read-only transaction: safe to send again.
    return call("POST", "/v1/snapshot-read", Safety.SAFE, body,
        (answer, replayed) -> SnapshotRead.from(answer));
  }

  // ---- Dependencies ----

  static Call<DependencyRegistration> registerDependency(String kind, KeyReference leader,
      KeyReference follower, String function) {
    return call("POST", "/v1/dependencies", Safety.KEYED,
        Operation.dependencyInput(kind, leader, follower, function), DependencyRegistration::from);
  }

  static Call<Dependency> getDependency(String dependencyId) {
    return call("GET", "/v1/dependencies/" + segment(dependencyId), Safety.SAFE, null,
        (body, replayed) -> Dependency.from(body));
  }

  static Call<Long> deregisterDependency(String dependencyId) {
    return call("DELETE", "/v1/dependencies/" + segment(dependencyId), Safety.KEYED, null,
        (body, replayed) -> Wire.number(body, "txId"));
  }

  static Call<EntityDependencies> entityDependencies(String type, String id) {
    return call("GET", entityPath(type, id) + "/dependencies", Safety.SAFE, null,
        (body, replayed) -> EntityDependencies.from(body));
  }

  static Call<EntityVersions> entityVersions(String type, String id, Long before,
      Integer limit) {
    Map<String, String> query = new java.util.LinkedHashMap<>();
    if (before != null) {
      query.put("before", Long.toString(before));
    }
    if (limit != null) {
      query.put("limit", Integer.toString(limit));
    }
    return new Call<>("GET", entityPath(type, id) + "/versions", Call.parameters(query), null,
        JSON, Safety.SAFE,
        (body, replayed) -> EntityVersions.from(body));
  }

  static Call<ObjectNode> health() {
    return call("GET", "/v1/health", Safety.SAFE, null, (body, replayed) -> (ObjectNode) body);
  }

  // ---- Interactive transactions. A step changes nothing durable but is not idempotent within
  // the transaction (an increment sent twice counts twice): steps are ONCE; commit takes a key.

  static Call<Long> begin() {
    return call("POST", "/v1/transactions/begin", Safety.ONCE, null,
        (body, replayed) -> Wire.number(body, "txId"));
  }

  static Call<EntityState> stepRead(long txId, String entity) {
    return call("POST", "/v1/transactions/" + txId + "/read", Safety.SAFE,
        Wire.NODES.objectNode().put("entity", entity), (body, replayed) -> EntityState.from(body));
  }

  static Call<EntityState> stepWrite(long txId, Operation operation) {
    return call("POST", "/v1/transactions/" + txId + "/write", Safety.ONCE, operation.json(),
        (body, replayed) -> EntityState.from(body));
  }

  static Call<EntityState> stepAct(long txId, String entity, String action,
      Map<String, ?> args) {
    return call("POST", "/v1/transactions/" + txId + "/action", Safety.ONCE,
        Operation.act(entity, action, args == null ? Map.of() : args).json(),
        (body, replayed) -> EntityState.from(body));
  }

  static Call<TransactionResult> commit(long txId) {
    return call("POST", "/v1/transactions/" + txId + "/commit", Safety.KEYED, null,
        TransactionResult::from);
  }

  static Call<Void> abort(long txId) {
    // A lost answer to an abort that took effect would make a second attempt not_found: once.
    return call("POST", "/v1/transactions/" + txId + "/abort", Safety.ONCE, null,
        (body, replayed) -> null);
  }
}
