package dev.troupe.server.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.client.EntityPage;
import dev.troupe.client.EntityState;
import dev.troupe.client.ListQuery;
import dev.troupe.client.ListedEntity;
import dev.troupe.client.TroupeClient;
import dev.troupe.client.TroupeClientException;
import dev.troupe.client.Written;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.net.URLDecoder;
import java.net.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The entity contract's requests ({@code contract.EntityContract}) made through the Java client:
 * each request becomes the client method that makes it ({@code get}, {@code patch}, {@code
 * putKey}, {@code listEntities}, ...), whose typed result is written back as the JSON the
 * contract checks, and whose {@link TroupeClientException} becomes the error answer (its status
 * and body). So every contract case checks what the client sends, how it reads each answer and
 * which exception it throws.
 *
 * <p>A request a typed client cannot make (a malformed body, a method the resource does not take,
 * a path of no operation, {@code states=yes}) is made by {@code raw} over plain HTTP and listed in
 * {@link #raw()}.
 *
 * <p>Concurrency: safe to share (the contract's concurrent writers use one driver).
 */
final class ClientContractDriver {
  private static final HttpHeaders NO_HEADERS = HttpHeaders.of(Map.of(), (name, value) -> true);

  /** Makes a request over plain HTTP. */
  @FunctionalInterface
  interface RawRequest {
    Answer send(String method, String path, String body) throws Exception;
  }

  private final TroupeClient client;
  private final RawRequest rawRequest;
  private final List<String> raw = java.util.Collections.synchronizedList(new ArrayList<>());

  ClientContractDriver(TroupeClient client, RawRequest rawRequest) {
    this.client = client;
    this.rawRequest = rawRequest;
  }

  /** The requests made over plain HTTP so far (method and the start of the path). */
  List<String> raw() {
    return List.copyOf(raw);
  }

  Answer send(String method, String path, String body) throws Exception {
    java.util.concurrent.Callable<JsonNode> call = clientCall(method, path, body);
    if (call == null) {
      raw.add(method + " " + (path.length() > 60 ? path.substring(0, 60) + "..." : path));
      return rawRequest.send(method, path, body);
    }
    try {
      // Written as JSON text and parsed back as the contract parses answers (numbers as the
      // server's JSON reader types them).
      String text = call.call().toString();
      return new Answer(200, Json.parse(text), text, NO_HEADERS);
    } catch (TroupeClientException refused) {
      String text = refused.body().toString();
      return new Answer(refused.status(), Json.parse(text), text, NO_HEADERS);
    }
  }

  /** The client call that makes this request, or null when the client cannot make it. */
  private java.util.concurrent.Callable<JsonNode> clientCall(String method, String path,
      String body) {
    int question = path.indexOf('?');
    String[] segments = (question < 0 ? path : path.substring(0, question)).split("/");
    Map<String, String> query = new HashMap<>();
    // A projection's keys (key=K, repeated; state=none: an empty list), null without one.
    List<String> projection = null;
    if (question >= 0) {
      for (String parameter : path.substring(question + 1).split("&")) {
        String[] pair = parameter.split("=", 2);
        String name = decode(pair[0]);
        String parameterValue = decode(pair[1]);
        if (name.equals("key") || name.equals("state") && parameterValue.equals("none")) {
          projection = projection == null ? new ArrayList<>() : projection;
          if (name.equals("key")) {
            projection.add(parameterValue);
          }
        } else {
          query.put(name, parameterValue);
        }
      }
    }
    // segments: "", "v1", "entities", type[, id[, "keys", key]]
    if (segments.length < 4 || !segments[1].equals("v1") || !segments[2].equals("entities")
        || projection != null && segments.length != 5) {
      return null;
    }
    String type = decode(segments[3]);
    JsonNode parsedBody = null;
    if (body != null) {
      try {
        parsedBody = Json.parse(body);
      } catch (RuntimeException malformed) {
        return null;
      }
    }
    JsonNode value = parsedBody;
    if (segments.length == 4) {
      ListQuery listing = listQuery(query);
      return method.equals("GET") && listing != null
          ? () -> page(client.listEntities(type, listing)) : null;
    }
    String id = decode(segments[4]);
    if (segments.length == 5 && query.isEmpty() && projection != null) {
      List<String> keys = projection;
      return switch (method) {
        case "GET" -> () -> entity(client.get(type, id, keys));
        case "PATCH" -> value != null && value.isObject()
            ? () -> written(client.patch(type, id, Json.MAPPER.convertValue(value,
                new com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>>() {}),
                keys))
            : null;
        default -> null;
      };
    }
    if (segments.length == 5 && query.isEmpty()) {
      return switch (method) {
        case "GET" -> () -> entity(client.get(type, id));
        case "DELETE" -> () -> written(client.delete(type, id));
        case "PATCH" -> value != null && value.isObject()
            ? () -> written(client.patch(type, id, Json.MAPPER.convertValue(value,
                new com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>>() {})))
            : null;
        default -> null;
      };
    }
    if (segments.length == 7 && segments[5].equals("keys") && query.isEmpty()) {
      String key = decode(segments[6]);
      return switch (method) {
        case "GET" -> () -> Json.NODES.objectNode().set("value", client.getKey(type, id, key));
        case "PUT" -> value != null ? () -> written(client.putKey(type, id, key, value)) : null;
        case "DELETE" -> () -> written(client.deleteKey(type, id, key));
        default -> null;
      };
    }
    return null;
  }

  private static ListQuery listQuery(Map<String, String> query) {
    ListQuery listing = ListQuery.firstPage();
    for (Map.Entry<String, String> parameter : query.entrySet()) {
      String value = parameter.getValue();
      switch (parameter.getKey()) {
        case "after" -> listing = listing.after(value);
        case "from" -> listing = listing.from(value);
        case "limit" -> listing = listing.limit(Integer.parseInt(value));
        case "at" -> listing = listing.at(Long.parseLong(value));
        case "states" -> {
          if (!value.equals("true")) {
            return null;
          }
          listing = listing.withStates();
        }
        default -> {
          return null;
        }
      }
    }
    return listing;
  }

  private static String decode(String segment) {
    return URLDecoder.decode(segment, StandardCharsets.UTF_8);
  }

  private static JsonNode entity(EntityState read) {
    ObjectNode json = Json.NODES.objectNode().put("type", read.type()).put("id", read.id());
    json.set("state", read.state());
    return json.put("version", read.version());
  }

  private static JsonNode written(Written written) {
    ObjectNode json = Json.NODES.objectNode();
    written.version().ifPresent(version -> json.put("version", version));
    written.state().ifPresent(state -> json.set("state", state));
    return json;
  }

  private static JsonNode page(EntityPage page) {
    ObjectNode json = Json.NODES.objectNode().put("type", page.type());
    var entities = json.putArray("entities");
    for (ListedEntity listed : page.entities()) {
      ObjectNode entity = entities.addObject().put("id", listed.id())
          .put("version", listed.version());
      listed.state().ifPresent(state -> entity.set("state", state));
    }
    if (page.next().isPresent()) {
      json.put("next", page.next().get());
    } else {
      json.putNull("next");
    }
    return json;
  }
}
