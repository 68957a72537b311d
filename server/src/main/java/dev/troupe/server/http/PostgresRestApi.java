package dev.troupe.server.http;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.StateProjection;
import dev.troupe.server.postgres.PostgresEntities;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.HttpMethod;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.stream.Materializer;

/**
 * The benchmark baseline's REST API: Troupe's entity paths, answered from PostgreSQL through
 * {@link PostgresEntities} (the D-Thespis paper's DB_1S_1DC). Same HTTP stack, same validation
 * and limits ({@link RequestSupport}), same JSON bodies and error codes as {@link RestApi}, so
 * that one client and one contract test suite serve both.
 *
 * <p>Routes: {@code GET /v1/health}; {@code GET /metrics} (serialization retries); {@code GET
 * /v1/entities/{type}} (a listing, without {@code at}); {@code GET | PATCH | DELETE /v1/entities/{type}/{id}};
 * {@code GET | PUT | DELETE /v1/entities/{type}/{id}/keys/{key}}. Everything else is 404.
 *
 * <p>JDBC blocks, so every statement runs on {@code executor} (one thread per pooled connection,
 * with a bounded queue: a full queue is 429 overloaded and changes nothing).
 */
public final class PostgresRestApi
    implements org.apache.pekko.japi.function.Function<HttpRequest, CompletionStage<HttpResponse>> {
  private static final byte[] HEALTH_OK = "{\"status\":\"ok\"}".getBytes(StandardCharsets.UTF_8);

  private final PostgresEntities entities;
  private final Executor executor;
  private final Materializer materializer;
  private final RequestSupport support;
  private final HttpSettings settings;
  private final dev.troupe.runtime.RuntimeSettings.ListingSettings listing;

  public PostgresRestApi(PostgresEntities entities, Executor executor, HttpSettings settings,
      dev.troupe.runtime.RuntimeSettings.ListingSettings listing, Materializer materializer) {
    this.entities = entities;
    this.listing = listing;
    this.executor = executor;
    this.materializer = materializer;
    this.support = new RequestSupport(settings, materializer);
    this.settings = settings;
  }

  @Override
  public CompletionStage<HttpResponse> apply(HttpRequest request) {
    return support.answer(request, this::route);
  }

  private CompletionStage<HttpResponse> route(HttpRequest request) {
    List<String> path = RequestSupport.segments(request);
    int size = path.size();
    if (size == 2 && path.get(0).equals("v1") && path.get(1).equals("health")) {
      support.requireMethod(request, HttpMethods.GET);
      request.discardEntityBytes(materializer);
      return RequestSupport.completed(RequestSupport.json(200, HEALTH_OK));
    }
    if (size == 1 && path.get(0).equals("metrics")) {
      support.requireMethod(request, HttpMethods.GET);
      request.discardEntityBytes(materializer);
      return RequestSupport.completed(HttpResponse.create().withEntity(
          org.apache.pekko.http.javadsl.model.ContentTypes.TEXT_PLAIN_UTF8,
          "# HELP postgres_serialization_retries_total Statements retried after a serialization"
              + " failure or deadlock.\n# TYPE postgres_serialization_retries_total counter\n"
              + "postgres_serialization_retries_total " + entities.retries() + "\n"));
    }
    if (size == 3 && path.get(0).equals("v1") && path.get(1).equals("entities")) {
      return listingRoute(request, support.checkTypeName(path.get(2)));
    }
    if (size < 4 || !path.get(0).equals("v1") || !path.get(1).equals("entities")) {
      return support.notFound(request);
    }
    EntityId entity = support.entity(path.get(2), path.get(3));
    if (size == 4) {
      return entityRoute(request, entity);
    }
    if (size == 6 && path.get(4).equals("keys")) {
      return keyRoute(request, entity, support.checkKey(path.get(5)));
    }
    return support.notFound(request);
  }

  /** A page of the type's entities in id order, with the same query and answer as Troupe's. */
  private CompletionStage<HttpResponse> listingRoute(HttpRequest request, String type) {
    support.requireMethod(request, HttpMethods.GET);
    request.discardEntityBytes(materializer);
    ListingQuery query = ListingQuery.parse(request.getUri().query()::get, listing);
    query.start().ifPresent(id -> support.entity(type, id));
    if (query.at().isPresent()) {
      throw TroupeException.invalid("the PostgreSQL baseline keeps no history: 'at' is not"
          + " supported");
    }
    return blocking(() -> {
      List<PostgresEntities.Listed> page = entities.list(type, query.start().orElse(null),
          query.includeStart(), query.limit(), query.withStates());
      return RequestSupport.json(200, rawObject(generator -> {
        generator.writeStringField("type", type);
        generator.writeArrayFieldStart("entities");
        for (PostgresEntities.Listed listed : page) {
          generator.writeStartObject();
          generator.writeStringField("id", listed.id());
          generator.writeNumberField("version", listed.version());
          if (listed.stateJson() != null) {
            generator.writeFieldName("state");
            generator.writeRawValue(listed.stateJson());
          }
          generator.writeEndObject();
        }
        generator.writeEndArray();
        // A full page may have more after it; a short one is the end of the type.
        if (page.size() == query.limit()) {
          generator.writeStringField("next", page.get(page.size() - 1).id());
        } else {
          generator.writeNullField("next");
        }
      }));
    });
  }

  private CompletionStage<HttpResponse> entityRoute(HttpRequest request, EntityId entity) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      if (request.getUri().query().get("at").isPresent()) {
        throw TroupeException.invalid("the PostgreSQL baseline keeps no history: 'at' is not"
            + " supported");
      }
      Optional<StateProjection> projection =
          ProjectionQuery.parse(request.getUri().query(), settings);
      return blocking(() -> entities.get(entity.type(), entity.id())
          .map(stored -> RequestSupport.json(200, RequestSupport.entityBody(entity,
              projected(stored.stateJson(), projection), stored.version())))
          .orElseThrow(() -> new TroupeException(ErrorCode.NOT_FOUND,
              entity + " does not exist")));
    }
    if (method.equals(HttpMethods.PATCH)) {
      return support.body(request).thenCompose(bytes -> {
        JsonNode patch = Json.parse(bytes);
        if (!patch.isObject() || patch.isEmpty()) {
          throw TroupeException.invalid(
              "PATCH body must be a non-empty JSON object of key: value assignments");
        }
        Iterator<Map.Entry<String, JsonNode>> fields = patch.fields();
        while (fields.hasNext()) {
          Map.Entry<String, JsonNode> field = fields.next();
          support.checkKey(field.getKey());
          support.checkValueSize(field.getValue());
        }
        Optional<StateProjection> projection =
            ProjectionQuery.parse(request.getUri().query(), settings);
        String patchJson = Json.write(patch);
        if (projection.isPresent() && projection.get().keys().isEmpty()) {
          // state=none: the version alone, as Troupe answers it ({"version":V,"state":{}}).
          return blocking(() -> RequestSupport.json(200, versionAndStateBody(new PostgresEntities
              .Stored("{}", entities.patchReturningVersion(entity.type(), entity.id(),
                  patchJson)), projection)));
        }
        return blocking(() -> RequestSupport.json(200, versionAndStateBody(
            entities.patch(entity.type(), entity.id(), patchJson), projection)));
      });
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return blocking(() -> RequestSupport.version(entities.delete(entity.type(), entity.id())
          .orElseThrow(() -> new TroupeException(ErrorCode.NOT_FOUND,
              entity + " does not exist"))));
    }
    throw support.methodNotAllowed(request,
        HttpMethods.GET, HttpMethods.PATCH, HttpMethods.DELETE);
  }

  private CompletionStage<HttpResponse> keyRoute(HttpRequest request, EntityId entity,
      String key) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      return blocking(() -> {
        String value = entities.getKey(entity.type(), entity.id(), key).orElseThrow(() ->
            new TroupeException(ErrorCode.NOT_FOUND, entity + " has no key '" + key + "'"));
        return RequestSupport.json(200, rawObject(generator -> {
          generator.writeFieldName("value");
          generator.writeRawValue(value);
        }));
      });
    }
    if (method.equals(HttpMethods.PUT)) {
      return support.body(request).thenCompose(bytes -> {
        String valueJson = Json.write(support.checkValueSize(Json.parse(bytes)));
        return blocking(() -> RequestSupport.version(
            entities.putKey(entity.type(), entity.id(), key, valueJson)));
      });
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return blocking(() -> RequestSupport.version(
          entities.deleteKey(entity.type(), entity.id(), key)));
    }
    throw support.methodNotAllowed(request,
        HttpMethods.GET, HttpMethods.PUT, HttpMethods.DELETE);
  }

  /** Runs a JDBC call on the executor; a full queue is 429 overloaded, nothing started. */
  private CompletableFuture<HttpResponse> blocking(Supplier<HttpResponse> call) {
    try {
      return CompletableFuture.supplyAsync(call, executor);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "every PostgreSQL connection is busy and the queue is full; retry later"));
    }
  }

  private static byte[] versionAndStateBody(PostgresEntities.Stored stored,
      Optional<StateProjection> projection) {
    return rawObject(generator -> {
      generator.writeNumberField("version", stored.version());
      generator.writeFieldName("state");
      generator.writeRawValue(new String(projected(stored.stateJson(), projection),
          StandardCharsets.UTF_8));
    });
  }

  /**
   * A stored state (a JSON object of key to value: the baseline is schemaless) as JSON bytes,
   * restricted to the keys {@code projection} names, in its order (keys it does not hold left
   * out), as Troupe renders a schemaless entity's projection; the whole state without one.
   */
  static byte[] projected(String stateJson, Optional<StateProjection> projection) {
    if (projection.isEmpty()) {
      return stateJson.getBytes(StandardCharsets.UTF_8);
    }
    if (projection.get().keys().isEmpty()) {
      return EMPTY_STATE; // state=none: nothing to parse (what Troupe answers, no cheaper)
    }
    JsonNode state = Json.parse(stateJson.getBytes(StandardCharsets.UTF_8));
    com.fasterxml.jackson.databind.node.ObjectNode restricted = Json.NODES.objectNode();
    for (String key : projection.get().keys()) {
      JsonNode value = state.get(key);
      if (value != null) {
        restricted.set(key, value);
      }
    }
    return Json.writeBytes(restricted);
  }

  private static final byte[] EMPTY_STATE = "{}".getBytes(StandardCharsets.US_ASCII);

  private interface Fields {
    void write(JsonGenerator generator) throws IOException;
  }

  /** A JSON object whose fields may embed PostgreSQL's JSON text as is, without re-parsing. */
  private static byte[] rawObject(Fields fields) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator generator = Json.MAPPER.getFactory().createGenerator(out)) {
      generator.writeStartObject();
      fields.write(generator);
      generator.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

}
