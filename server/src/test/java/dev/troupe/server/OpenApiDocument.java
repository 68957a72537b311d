package dev.troupe.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The REST API's OpenAPI document (server/src/main/resources/openapi/troupe-v1.json) as a test
 * oracle: which (method, path template) operations it describes, and whether a real answer is one
 * it documents (its status listed for the operation, its declared headers present, its body valid
 * against the documented JSON Schema, validated by networknt's JSON Schema 2020-12 validator with
 * the OpenAPI 3.1 dialect).
 */
public final class OpenApiDocument {
  static final String RESOURCE = "/openapi/troupe-v1.json";
  /** The document's base IRI for the validator: every schema is found by a pointer into it. */
  private static final String BASE = "https://troupe.invalid/openapi/troupe-v1.json";
  private static final List<String> METHODS =
      List.of("get", "put", "post", "delete", "patch", "head", "options", "trace");

  private final String text;
  private final JsonNode document;
  private final SchemaRegistry registry;

  private OpenApiDocument(String text) {
    this.text = text;
    this.document = Json.parse(text.getBytes(StandardCharsets.UTF_8));
    this.registry = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31(),
        builder -> builder.schemas(Map.of(BASE, text)));
  }

  public static OpenApiDocument load() {
    try (InputStream in = OpenApiDocument.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is not on the class path");
      }
      return new OpenApiDocument(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  String text() {
    return text;
  }

  JsonNode json() {
    return document;
  }

  /** Every operation the document describes, as "METHOD /path/{template}". */
  Set<String> operations() {
    Set<String> operations = new LinkedHashSet<>();
    Iterator<Map.Entry<String, JsonNode>> paths = document.path("paths").fields();
    while (paths.hasNext()) {
      Map.Entry<String, JsonNode> path = paths.next();
      for (String method : METHODS) {
        if (path.getValue().has(method)) {
          operations.add(method.toUpperCase(Locale.ROOT) + " " + path.getKey());
        }
      }
    }
    return operations;
  }

  /**
   * What is wrong with {@code answer} as the answer of {@code method template} by the document:
   * an empty list when it is documented.
   */
  List<String> problems(String method, String template, Answer answer) {
    List<String> problems = new ArrayList<>();
    String operationPointer = "/paths/" + escape(template) + "/" + method.toLowerCase(Locale.ROOT);
    JsonNode operation = document.at(operationPointer);
    if (operation.isMissingNode()) {
      problems.add(method + " " + template + " is not in the document");
      return problems;
    }
    String status = Integer.toString(answer.status());
    String responsePointer = operationPointer + "/responses/" + status;
    JsonNode response = document.at(responsePointer);
    if (response.isMissingNode()) {
      problems.add("status " + status + " is not documented for " + method + " " + template
          + " (documented: " + fieldNames(operation.path("responses")) + "); body: "
          + answer.text());
      return problems;
    }
    if (response.has("$ref")) {
      responsePointer = response.get("$ref").asText().substring(1);
      response = document.at(responsePointer);
    }
    Iterator<Map.Entry<String, JsonNode>> headers = response.path("headers").fields();
    while (headers.hasNext()) {
      Map.Entry<String, JsonNode> header = headers.next();
      JsonNode declaration = header.getValue().has("$ref")
          ? document.at(header.getValue().get("$ref").asText().substring(1)) : header.getValue();
      if (declaration.path("required").asBoolean(false)
          && answer.header(header.getKey()).isEmpty()) {
        problems.add("the " + status + " answer lacks the required header " + header.getKey());
      }
    }
    String contentType = answer.header("Content-Type").orElse("");
    JsonNode content = response.path("content");
    if (content.has("application/json")) {
      if (!contentType.startsWith("application/json")) {
        problems.add("the " + status + " answer is " + contentType + ", documented application/json: "
            + answer.text());
        return problems;
      }
      problems.addAll(validate(responsePointer + "/content/application~1json/schema",
          answer.text()));
    } else if (content.has("text/plain")) {
      if (!contentType.startsWith("text/plain")) {
        problems.add("the " + status + " answer is " + contentType + ", documented text/plain");
      }
    } else if (content.has("application/octet-stream")) {
      if (!contentType.startsWith("application/octet-stream")) {
        problems.add("the " + status + " answer is " + contentType
            + ", documented application/octet-stream");
      }
    } else if (!content.isMissingNode()) {
      problems.add("the test does not know the content of " + responsePointer);
    }
    return problems;
  }

  /** What is wrong with {@code json} against the schema at {@code pointer} in the document. */
  public List<String> validate(String pointer, String json) {
    Schema schema = registry.getSchema(SchemaLocation.of(BASE + "#" + pointer));
    List<String> problems = new ArrayList<>();
    for (Error error : schema.validate(Json.parse(json.getBytes(StandardCharsets.UTF_8)))) {
      problems.add(pointer + ": " + error.toString() + " in " + json);
    }
    return problems;
  }

  private static String escape(String template) {
    return template.replace("~", "~0").replace("/", "~1");
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
