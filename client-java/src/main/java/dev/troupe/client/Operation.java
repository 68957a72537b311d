package dev.troupe.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * One operation of a transaction, as the request body carries it. Entities are named {@code
 * Type/id}. Static transactions ({@link TroupeClient#transact}) take a list of any of these;
 * interactive ones ({@link InteractiveTransaction#write}) the key operations.
 *
 * <p>Values and arguments are anything Jackson turns into JSON: a {@code JsonNode}, a {@code
 * Map}, a string, a number, a boolean, a list, null.
 */
public record Operation(ObjectNode json) {
  /** An operation from its JSON as the request body carries it (copied). */
  public Operation {
    json = json.deepCopy();
  }

  /** Runs a declared action with its parameters. */
  public static Operation act(String entity, String action, Map<String, ?> args) {
    ObjectNode json = Wire.NODES.objectNode().put("entity", entity).put("action", action);
    json.set("args", Wire.object(args));
    return new Operation(json);
  }

  /** Assigns a key. */
  public static Operation assign(String entity, String key, Object value) {
    ObjectNode json = keyOperation(entity, "assign", key);
    json.set("value", Wire.tree(value));
    return new Operation(json);
  }

  /** Adds {@code by} to a counter. */
  public static Operation increment(String entity, String key, long by) {
    return new Operation(keyOperation(entity, "increment", key).put("by", by));
  }

  /** Adds an element to a set. */
  public static Operation add(String entity, String key, Object element) {
    ObjectNode json = keyOperation(entity, "add", key);
    json.set("element", Wire.tree(element));
    return new Operation(json);
  }

  /** Removes an element from a set. */
  public static Operation remove(String entity, String key, Object element) {
    ObjectNode json = keyOperation(entity, "remove", key);
    json.set("element", Wire.tree(element));
    return new Operation(json);
  }

  /** Deletes a key. */
  public static Operation deleteKey(String entity, String key) {
    return new Operation(keyOperation(entity, "deleteKey", key));
  }

  /** Deletes the whole entity. */
  public static Operation delete(String entity) {
    return new Operation(Wire.NODES.objectNode().put("entity", entity).put("op", "delete"));
  }

  /**
   * Registers a dependency in the transaction (it runs on the leader).
   *
   * @param kind {@code update} (with a function) or {@code delete}
   * @param function the update's function; null for {@code delete}
   */
  public static Operation registerDependency(String kind, KeyReference leader,
      KeyReference follower, String function) {
    ObjectNode json = Wire.NODES.objectNode().put("op", "registerDependency");
    json.set("dependency", dependencyInput(kind, leader, follower, function));
    return new Operation(json);
  }

  /** Deregisters a dependency by its id. */
  public static Operation deregisterDependency(String dependencyId) {
    return new Operation(
        Wire.NODES.objectNode().put("op", "deregisterDependency").put("id", dependencyId));
  }

  static ObjectNode dependencyInput(String kind, KeyReference leader, KeyReference follower,
      String function) {
    ObjectNode json = Wire.NODES.objectNode().put("kind", kind);
    json.set("leader", leader.json());
    json.set("follower", follower.json());
    if (function != null) {
      json.put("function", function);
    }
    return json;
  }

  private static ObjectNode keyOperation(String entity, String op, String key) {
    return Wire.NODES.objectNode().put("entity", entity).put("op", op).put("key", key);
  }
}
