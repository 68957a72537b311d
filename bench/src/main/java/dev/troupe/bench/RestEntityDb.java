package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.HashMap;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * The YCSB binding for Troupe's entity REST API, and so for every server that speaks it (the
 * PostgreSQL baseline, the bare HTTP ceiling). A YCSB table is an entity type, a record an entity
 * and a field a key holding a JSON string:
 *
 * <ul>
 *   <li>read: {@code GET /v1/entities/{table}/{key}}, the requested fields taken from the state;
 *       when YCSB names the fields ({@code readallfields=false}), only those are asked for
 *       ({@code ?key=F&key=G}, a projection), so the server renders and sends only them;
 *   <li>insert and update: {@code PATCH /v1/entities/{table}/{key}?state=none} with the fields
 *       (atomic): YCSB never reads a write's answer, so it asks for none of the state (issue 20:
 *       the whole 1 KB record rendered for every write was an eighth of the server's CPU); every
 *       server compared (Troupe, the PostgreSQL baseline, the bare ceiling) answers the same lean
 *       {@code {"version","state":{}}};
 *   <li>delete: {@code DELETE /v1/entities/{table}/{key}};
 *   <li>scan: {@code GET /v1/entities/{table}?from={startKey}&limit={recordCount}&states=true}, one
 *       request (YCSB's range: the start key, if it exists, and the records after it in key
 *       order), each record's requested fields taken from its state; a record count above the
 *       server's {@code troupe.listing.max-limit} answers 400, which is ERROR.
 * </ul>
 *
 * <p>One instance per YCSB client thread (YCSB's contract), each with one keep-alive connection;
 * properties {@code troupe.rest.host} and {@code troupe.rest.port} name the server. A status other
 * than 200 (or 404, which is NOT_FOUND) and any I/O failure are ERROR; the connection reconnects.
 *
 * <p><b>Owner-aware</b> ({@code troupe.rest.owner-aware=true}, with {@code troupe.rest.ports}): the
 * client sends each record's request to the member of the data centre that hosts its partition,
 * from the placement {@code GET /v1/cluster} shows ({@link OwnerPlacement}, one per cluster shared
 * by the client threads, re-read when an answer carries {@code Troupe-Forwarded: true} or is a
 * {@code 503 not_owner}), with a keep-alive connection per member; a record whose partition has no
 * known member goes to the thread's own member, which routes it.
 */
public final class RestEntityDb extends DB {
  static final String HOST_PROPERTY = "troupe.rest.host";
  static final String PORT_PROPERTY = "troupe.rest.port";
  /**
   * Several servers of one data centre, {@code port,port,...} (overrides {@link #PORT_PROPERTY}):
   * the client threads are spread over them round-robin, each keeping its one server.
   */
  static final String PORTS_PROPERTY = "troupe.rest.ports";
  /** Which server of {@link #PORTS_PROPERTY} the next client thread takes. */
  private static final java.util.concurrent.atomic.AtomicLong NEXT_SERVER =
      new java.util.concurrent.atomic.AtomicLong();
  /** A bearer token sent with every request (absent: none). */
  static final String TOKEN_PROPERTY = "troupe.rest.token";
  /** "true": every write carries a fresh {@code Idempotency-Key}, as a retrying client sends. */
  static final String IDEMPOTENCY_KEYS_PROPERTY = "troupe.rest.idempotency-keys";
  /** "true": each request goes to the member hosting its record (see the class comment). */
  static final String OWNER_AWARE_PROPERTY = "troupe.rest.owner-aware";
  /** Least time between two readings of the placement by the client threads of one cluster. */
  static final long PLACEMENT_REFRESH_INTERVAL_MILLIS = 250;
  /** The placement of each cluster (by its ports), shared by the client threads. */
  private static final java.util.concurrent.ConcurrentHashMap<String, OwnerPlacement> PLACEMENTS =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** This thread's placement (owner-aware only, else null). */
  private OwnerPlacement placement;
  /** This thread's connection to each member, by base URL (owner-aware only). */
  private final Map<String, HttpConnection> connectionsByUrl = new HashMap<>();

  private HttpConnection connection;
  /** Unique per client thread and run; null when writes carry no idempotency key. */
  private String idempotencyKeyPrefix;
  private long writes;

  @Override
  public void init() {
    String ports = getProperties().getProperty(PORTS_PROPERTY);
    int port;
    if (ports == null) {
      port = Integer.parseInt(getProperties().getProperty(PORT_PROPERTY));
    } else {
      String[] each = ports.split(",");
      port = Integer.parseInt(
          each[(int) Math.floorMod(NEXT_SERVER.getAndIncrement(), (long) each.length)].strip());
    }
    connection = new HttpConnection(getProperties().getProperty(HOST_PROPERTY, "127.0.0.1"), port,
        getProperties().getProperty(TOKEN_PROPERTY));
    if (Boolean.parseBoolean(getProperties().getProperty(IDEMPOTENCY_KEYS_PROPERTY))) {
      idempotencyKeyPrefix = java.util.UUID.randomUUID() + "-";
    }
    if (Boolean.parseBoolean(getProperties().getProperty(OWNER_AWARE_PROPERTY))) {
      String host = getProperties().getProperty(HOST_PROPERTY, "127.0.0.1");
      String token = getProperties().getProperty(TOKEN_PROPERTY);
      List<String> members = java.util.Arrays.stream((ports == null
              ? getProperties().getProperty(PORT_PROPERTY) : ports).split(","))
          .map(each -> "http://" + host + ":" + each.strip()).toList();
      placement = PLACEMENTS.computeIfAbsent(String.join(",", members),
          ignored -> new OwnerPlacement(members, url -> readCluster(url, token), System::nanoTime,
              java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(
                  PLACEMENT_REFRESH_INTERVAL_MILLIS)));
    }
  }

  private static JsonNode readCluster(String baseUrl, String token) throws IOException {
    java.net.URI uri = java.net.URI.create(baseUrl);
    try (HttpConnection once = new HttpConnection(uri.getHost(), uri.getPort(), token)) {
      HttpConnection.Response response = once.get("/v1/cluster");
      if (response.status() != 200) {
        throw new IOException("GET /v1/cluster answered " + response.status());
      }
      return Json.parse(response.body());
    }
  }

  /** The connection to send {@code key}'s request on: its owner's, or this thread's member. */
  private HttpConnection connectionFor(String table, String key) {
    if (placement == null) {
      return connection;
    }
    String url = placement.urlOf(new dev.troupe.model.EntityId(table, key));
    if (url == null) {
      return connection;
    }
    return connectionsByUrl.computeIfAbsent(url, owner -> {
      java.net.URI uri = java.net.URI.create(owner);
      return new HttpConnection(uri.getHost(), uri.getPort(),
          getProperties().getProperty(TOKEN_PROPERTY));
    });
  }

  /** Tells the placement when an answer says it is stale; returns the response. */
  private HttpConnection.Response observed(HttpConnection.Response response) {
    if (placement != null && (response.forwarded()
        || response.status() == 503 && response.text().contains("\"not_owner\""))) {
      placement.placementMoved();
    }
    return response;
  }

  private String nextIdempotencyKey() {
    return idempotencyKeyPrefix == null ? null : idempotencyKeyPrefix + (writes++);
  }

  @Override
  public void cleanup() {
    if (connection != null) {
      connection.close();
    }
    connectionsByUrl.values().forEach(HttpConnection::close);
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      HttpConnection.Response response = observed(connectionFor(table, key).get(
          fields == null || fields.size() > MAX_PROJECTION_KEYS ? path(table, key)
              : path(table, key) + projection(fields)));
      if (response.status() == 404) {
        return Status.NOT_FOUND;
      }
      if (response.status() != 200) {
        // Named, as for scans: refused by admission or unavailable (429, 503: a client would
        // retry after Retry-After), or anything else.
        return response.status() == 429 || response.status() == 503
            ? Status.SERVICE_UNAVAILABLE : Status.ERROR;
      }
      JsonNode state = Json.parse(response.body()).get("state");
      if (state == null || !state.isObject()) {
        return Status.UNEXPECTED_STATE;
      }
      copyFields(state, fields, result);
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startKey, int recordCount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      // A range is no one record's: the thread's own member answers it from the shared store.
      HttpConnection.Response response = connection.get("/v1/entities/" + segment(table)
          + "?from=" + segment(startKey) + "&limit=" + recordCount + "&states=true");
      if (response.status() != 200) {
        // Named, so that a run's failures say which: refused by admission or unavailable (429,
        // 503: a client would retry after Retry-After) or refused as bad (400: a count above
        // troupe.listing.max-limit).
        return switch (response.status()) {
          case 429, 503 -> Status.SERVICE_UNAVAILABLE;
          case 400 -> Status.BAD_REQUEST;
          default -> Status.ERROR;
        };
      }
      JsonNode entities = Json.parse(response.body()).get("entities");
      if (entities == null || !entities.isArray()) {
        return Status.UNEXPECTED_STATE;
      }
      for (JsonNode entity : entities) {
        JsonNode state = entity.get("state");
        if (state == null || !state.isObject()) {
          return Status.UNEXPECTED_STATE;
        }
        HashMap<String, ByteIterator> record = new HashMap<>();
        copyFields(state, fields, record);
        result.add(record);
      }
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return patch(table, key, values);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return patch(table, key, values);
  }

  @Override
  public Status delete(String table, String key) {
    try {
      int status = observed(connectionFor(table, key).send("DELETE", path(table, key), null,
          nextIdempotencyKey())).status();
      return status == 200 ? Status.OK : status == 404 ? Status.NOT_FOUND : Status.ERROR;
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  private Status patch(String table, String key, Map<String, ByteIterator> values) {
    try {
      ObjectNode body = Json.NODES.objectNode();
      values.forEach((field, value) -> body.put(field, value.toString()));
      int status = observed(connectionFor(table, key).send("PATCH",
          path(table, key) + NO_STATE, Json.writeBytes(body), nextIdempotencyKey())).status();
      // Overload (429, 503: a full queue, the memory budget's refusal) told apart from errors in
      // the failure counts, as reads do.
      return status == 200 ? Status.OK
          : status == 429 || status == 503 ? Status.SERVICE_UNAVAILABLE : Status.ERROR;
    } catch (IOException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  /** The requested fields of a record's state (every field when {@code fields} is null). */
  private static void copyFields(JsonNode state, Set<String> fields,
      Map<String, ByteIterator> result) {
    if (fields == null) {
      Iterator<Map.Entry<String, JsonNode>> entries = state.fields();
      while (entries.hasNext()) {
        Map.Entry<String, JsonNode> entry = entries.next();
        result.put(entry.getKey(), new StringByteIterator(entry.getValue().asText()));
      }
    } else {
      for (String field : fields) {
        JsonNode value = state.get(field);
        if (value != null) {
          result.put(field, new StringByteIterator(value.asText()));
        }
      }
    }
  }

  /**
   * The most keys a projection may name (the server's default {@code
   * troupe.http.max-projection-keys}); a read of more fields asks for the whole state.
   */
  static final int MAX_PROJECTION_KEYS = 64;

  /** The query asking a write's answer for none of the state (YCSB never reads it). */
  static final String NO_STATE = "?state=none";

  /**
   * The query asking for only {@code fields} ({@code ?key=F&key=G}); an empty set asks for none
   * ({@code ?state=none}: a projection names at least one key).
   */
  static String projection(Set<String> fields) {
    if (fields.isEmpty()) {
      return NO_STATE;
    }
    StringBuilder query = new StringBuilder();
    for (String field : fields) {
      query.append(query.isEmpty() ? "?key=" : "&key=").append(segment(field));
    }
    return query.toString();
  }

  private static String path(String table, String key) {
    return "/v1/entities/" + segment(table) + "/" + segment(key);
  }

  private static String segment(String text) {
    return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
