package dev.troupe.model.dependency;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * A declared dependency between two keys of two entities (smsa.txt §2.3): a change of the leader
 * key is forwarded to the follower key, inside the transaction that changed the leader.
 *
 * <p>The id is derived from the kind and the two ends (at most one dependency of a kind joins two
 * keys), and encodes them, so a client can deregister by id and Troupe routes the request to the
 * leader without a global index. Ids are opaque to clients: URL-safe base64 of a JSON array.
 *
 * <p>Both ends keep a copy of the record ({@link DependencyKeys}): the leader to find its
 * followers, the follower to find its leaders when it is deleted.
 *
 * @param function how an update dependency computes the follower; {@code null} for a delete
 *     dependency
 * @param id derived from the other components when constructed (whatever is passed), and kept:
 *     ids are looked up on every forward, and deriving one costs a JSON rendering
 */
public record Dependency(DependencyKind kind, KeyReference leader, KeyReference follower,
    DependencyFunction function, String id) {

  /** The persisted and wire format's revision, written into every stored record. */
  public static final int FORMAT_REVISION = 1;

  public Dependency {
    if (kind == null) {
      throw TroupeException.invalid("a dependency needs a kind: update or delete");
    }
    if (leader == null || follower == null) {
      throw TroupeException.invalid("a dependency needs a leader and a follower");
    }
    if (leader.equals(follower)) {
      throw TroupeException.invalid("a key cannot depend on itself: " + leader);
    }
    if (kind == DependencyKind.UPDATE && function == null) {
      throw TroupeException.invalid("an update dependency needs a function: replicate, sum,"
          + " count, min, max or cel:<expression>");
    }
    if (kind == DependencyKind.DELETE && function != null) {
      throw TroupeException.invalid("a delete dependency takes no function: the leader's"
          + " deletion deletes the follower");
    }
    id = idOf(kind, leader, follower);
  }

  public Dependency(DependencyKind kind, KeyReference leader, KeyReference follower,
      DependencyFunction function) {
    this(kind, leader, follower, function, null);
  }

  public static String idOf(DependencyKind kind, KeyReference leader, KeyReference follower) {
    // Every decoded record derives its id again: plain text skips Jackson (the same text).
    String plain = plainIdArray(kind.wireName(),
        leader.entity().type(), leader.entity().id(), leader.key(), follower.entity().type(),
        follower.entity().id(), follower.key());
    if (plain != null) {
      return Base64.getUrlEncoder().withoutPadding()
          .encodeToString(plain.getBytes(StandardCharsets.UTF_8));
    }
    ArrayNode parts = Json.NODES.arrayNode();
    parts.add(kind.wireName()).add(leader.entity().type()).add(leader.entity().id())
        .add(leader.key()).add(follower.entity().type()).add(follower.entity().id())
        .add(follower.key());
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString(Json.write(parts).getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The id's JSON array as Jackson writes it when every part is printable ASCII without a quote or
   * a backslash (written as is); null otherwise, and the caller asks Jackson.
   */
  private static String plainIdArray(String... parts) {
    int length = 2;
    for (String part : parts) {
      for (int i = 0; i < part.length(); i++) {
        char c = part.charAt(i);
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
          return null;
        }
      }
      length += part.length() + 3;
    }
    StringBuilder text = new StringBuilder(length).append('[');
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) {
        text.append(',');
      }
      text.append('"').append(parts[i]).append('"');
    }
    return text.append(']').toString();
  }

  /** The ends an id names; {@code invalid_request} for text that is not a dependency id. */
  public record Ends(DependencyKind kind, KeyReference leader, KeyReference follower) {}

  public static Ends parseId(String id) {
    try {
      JsonNode parts = Json.parse(new String(Base64.getUrlDecoder().decode(id),
          StandardCharsets.UTF_8));
      if (!parts.isArray() || parts.size() != 7) {
        throw new IllegalArgumentException("not seven parts");
      }
      String[] text = new String[7];
      for (int i = 0; i < 7; i++) {
        if (!parts.get(i).isTextual()) {
          throw new IllegalArgumentException("part " + i + " is not text");
        }
        text[i] = parts.get(i).textValue();
      }
      DependencyKind kind = DependencyKind.fromWireName(text[0]);
      if (kind == null) {
        throw new IllegalArgumentException("unknown kind");
      }
      return new Ends(kind,
          new KeyReference(new EntityId(text[1], text[2]), text[3]),
          new KeyReference(new EntityId(text[4], text[5]), text[6]));
    } catch (IllegalArgumentException | TroupeException e) {
      throw TroupeException.invalid("'" + id + "' is not a dependency id");
    }
  }

  /** The client's view, also the stored form (with {@code revision}). */
  public ObjectNode toJson() {
    ObjectNode json = Json.NODES.objectNode();
    json.put("id", id());
    json.put("kind", kind.wireName());
    json.set("leader", endJson(leader));
    json.set("follower", endJson(follower));
    if (function != null) {
      json.put("function", function.wireName());
    }
    return json;
  }

  private static ObjectNode endJson(KeyReference end) {
    ObjectNode json = Json.NODES.objectNode();
    json.put("entity", end.entity().toString());
    json.put("key", end.key());
    return json;
  }

  /**
   * Parses the request body of {@code POST /v1/dependencies} (and the stored form, which adds an
   * id and is otherwise the same). Every problem is {@code invalid_request} with the field named.
   */
  public static Dependency fromJson(JsonNode json) {
    if (json == null || !json.isObject()) {
      throw TroupeException.invalid("a dependency must be a JSON object with kind, leader,"
          + " follower and (for an update dependency) function");
    }
    JsonNode kindNode = json.get("kind");
    DependencyKind kind = kindNode != null && kindNode.isTextual()
        ? DependencyKind.fromWireName(kindNode.textValue()) : null;
    if (kind == null) {
      throw TroupeException.invalid("kind: expected \"update\" or \"delete\"");
    }
    KeyReference leader = end(json, "leader");
    KeyReference follower = end(json, "follower");
    JsonNode functionNode = json.get("function");
    DependencyFunction function = null;
    if (functionNode != null && !functionNode.isNull()) {
      if (!functionNode.isTextual()) {
        throw TroupeException.invalid("function: expected text such as \"replicate\"");
      }
      try {
        function = DependencyFunction.parse(functionNode.textValue());
      } catch (TroupeException e) {
        throw TroupeException.invalid("function: " + e.getMessage());
      }
    }
    return new Dependency(kind, leader, follower, function);
  }

  private static KeyReference end(JsonNode json, String field) {
    JsonNode node = json.get(field);
    if (node == null || !node.isObject()) {
      throw TroupeException.invalid(field + ": expected {\"entity\": \"Type/id\", \"key\": ...}");
    }
    JsonNode entity = node.get("entity");
    JsonNode key = node.get("key");
    if (entity == null || !entity.isTextual()) {
      throw TroupeException.invalid(field + ".entity: expected \"Type/id\"");
    }
    if (key == null || !key.isTextual() || key.textValue().isEmpty()) {
      throw TroupeException.invalid(field + ".key: expected a key name");
    }
    try {
      return new KeyReference(EntityId.parse(entity.textValue()), key.textValue());
    } catch (TroupeException e) {
      throw TroupeException.invalid(field + ": " + e.getMessage());
    }
  }
}
