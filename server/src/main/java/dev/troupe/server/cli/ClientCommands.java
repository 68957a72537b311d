package dev.troupe.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.troupe.model.Json;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Client subcommands: thin wrappers over the REST API, printing its JSON answers. */
final class ClientCommands {
  private ClientCommands() {}

  /** Options every client command shares. */
  static final class Server {
    @Option(names = "--url", description = "Server URL (default: ${DEFAULT-VALUE}).",
        defaultValue = "${env:TROUPE_URL:-http://127.0.0.1:8080}")
    String url;

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "Bearer token for a server with authentication (default: $TROUPE_TOKEN).",
        defaultValue = "${env:TROUPE_TOKEN}")
    String token;

    private final HttpClient client =
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** {@code GET path}: the answer, whatever its status. */
    HttpResponse<String> get(String path) throws IOException, InterruptedException {
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url + path))
          .timeout(Duration.ofSeconds(60)).GET();
      if (token != null && !token.isBlank()) {
        request.header("Authorization", "Bearer " + token.trim());
      }
      return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    int send(String method, String path, String body, String contentType) {
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url + path))
          .timeout(Duration.ofSeconds(60))
          .method(method, body == null
              ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofString(body));
      if (body != null) {
        request.header("Content-Type", contentType);
      }
      if (token != null && !token.isBlank()) {
        request.header("Authorization", "Bearer " + token.trim());
      }
      return reaching(() -> {
        HttpResponse<String> response =
            client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        String text = pretty(response.body());
        if (response.statusCode() / 100 == 2) {
          System.out.println(text);
          return 0;
        }
        System.err.println("HTTP " + response.statusCode() + ": " + text);
        return 1;
      });
    }

    /**
     * {@code GET path} shown to a person: with {@code json} the answer as the server gives it
     * (pretty-printed), otherwise {@code render} of it. Exit codes as {@link #send}: 0 shown, 1 a
     * non-200 answer (printed), 2 the server unreachable.
     */
    int show(String path, boolean json, Function<JsonNode, String> render) {
      return reaching(() -> {
        HttpResponse<String> response = get(path);
        if (response.statusCode() != 200) {
          System.err.println("HTTP " + response.statusCode() + ": " + pretty(response.body()));
          return 1;
        }
        if (json) {
          System.out.println(pretty(response.body()));
          return 0;
        }
        System.out.print(render.apply(Json.parse(response.body())));
        return 0;
      });
    }

    /** An exchange with the server that ends in an exit code. */
    interface Exchange {
      int run() throws IOException, InterruptedException;
    }

    /** Runs {@code exchange}; the server unreachable (or the wait interrupted) is exit code 2. */
    int reaching(Exchange exchange) {
      try {
        return exchange.run();
      } catch (IOException e) {
        System.err.println("troupe: cannot reach " + url + ": " + e.getMessage());
        return 2;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 2;
      }
    }

    static String pretty(String body) {
      try {
        return Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(Json.parse(body));
      } catch (RuntimeException | IOException e) {
        return body;
      }
    }
  }

  static String entityPath(String entity) {
    int slash = entity.indexOf('/');
    if (slash <= 0 || slash == entity.length() - 1) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(new TroupeCli()), "entity must look like Type/id: " + entity);
    }
    return "/v1/entities/" + encode(entity.substring(0, slash)) + "/"
        + encode(entity.substring(slash + 1));
  }

  static String encode(String segment) {
    return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
  }

  @Command(name = "get", mixinStandardHelpOptions = true,
      description = "Show an entity, or one of its keys.")
  static final class Get implements Callable<Integer> {
    @Mixin Server server;
    @Parameters(index = "0", paramLabel = "TYPE/ID") String entity;
    @Parameters(index = "1", arity = "0..1", paramLabel = "KEY") String key;
    @Option(names = "--at", description = "Read the entity as of this version (commit timestamp).")
    Long at;

    @Override
    public Integer call() {
      String path = entityPath(entity) + (key == null ? "" : "/keys/" + encode(key));
      if (at != null) {
        path += "?at=" + at;
      }
      return server.send("GET", path, null, null);
    }
  }

  @Command(name = "put", mixinStandardHelpOptions = true,
      description = "Assign a JSON value to a key, or several keys at once with --patch.")
  static final class Put implements Callable<Integer> {
    @Mixin Server server;
    @Parameters(index = "0", paramLabel = "TYPE/ID") String entity;
    @Parameters(index = "1", arity = "0..1", paramLabel = "KEY") String key;
    @Parameters(index = "2", arity = "0..1", paramLabel = "JSON") String value;
    @Option(names = "--patch", paramLabel = "JSON_OBJECT",
        description = "Assign every key of this object atomically.")
    String patch;

    @Override
    public Integer call() {
      if (patch != null) {
        return server.send("PATCH", entityPath(entity), patch, "application/json");
      }
      if (key == null || value == null) {
        System.err.println("troupe put: give KEY and JSON, or --patch '{...}'");
        return 2;
      }
      return server.send("PUT", entityPath(entity) + "/keys/" + encode(key), value,
          "application/json");
    }
  }

  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete an entity, or one of its keys.")
  static final class Delete implements Callable<Integer> {
    @Mixin Server server;
    @Parameters(index = "0", paramLabel = "TYPE/ID") String entity;
    @Parameters(index = "1", arity = "0..1", paramLabel = "KEY") String key;

    @Override
    public Integer call() {
      return server.send("DELETE",
          entityPath(entity) + (key == null ? "" : "/keys/" + encode(key)), null, null);
    }
  }

  @Command(name = "act", mixinStandardHelpOptions = true,
      description = "Invoke an action of an entity's type with JSON parameters.")
  static final class Act implements Callable<Integer> {
    @Mixin Server server;
    @Parameters(index = "0", paramLabel = "TYPE/ID") String entity;
    @Parameters(index = "1", paramLabel = "ACTION") String action;
    @Parameters(index = "2", arity = "0..1", paramLabel = "JSON_PARAMS", defaultValue = "{}")
    String params;

    @Override
    public Integer call() {
      return server.send("POST", entityPath(entity) + "/actions/" + encode(action), params,
          "application/json");
    }
  }

  @Command(name = "types", mixinStandardHelpOptions = true,
      description = {"List, show or declare entity types.",
          "'types' lists them, 'types show NAME' shows one, 'types apply FILE' declares every type",
          "of a JSON or YAML file (YAML may hold several documents separated by ---)."})
  static final class Types implements Callable<Integer> {
    @Mixin Server server;
    @Parameters(index = "0", arity = "0..1", paramLabel = "list|show|apply",
        defaultValue = "list") String verb;
    @Parameters(index = "1", arity = "0..1", paramLabel = "NAME|FILE") String argument;
    @Option(names = "--migration", paramLabel = "discard",
        description = {"apply: the migration a redeclaration that would hide stored values names"
            + " (discard deletes them; docs/ARCHITECTURE.md, \"Type evolution\")"})
    String migration;

    @Override
    public Integer call() throws IOException {
      switch (verb) {
        case "list" -> {
          return server.send("GET", "/v1/types", null, null);
        }
        case "show" -> {
          return server.send("GET", "/v1/types/" + encode(argument), null, null);
        }
        case "apply" -> {
          if (argument == null) {
            System.err.println("troupe types apply: give a FILE");
            return 2;
          }
          ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
          int status = 0;
          try (MappingIterator<JsonNode> documents =
              yaml.readerFor(JsonNode.class).readValues(Files.readString(Path.of(argument)))) {
            while (documents.hasNext()) {
              JsonNode document = documents.next();
              JsonNode name = document.get("type");
              if (name == null || !name.isTextual()) {
                System.err.println("troupe types apply: every document needs \"type\": NAME");
                return 2;
              }
              status = Math.max(status, server.send("PUT", "/v1/types/" + encode(name.asText())
                      + (migration == null ? "" : "?migration=" + encode(migration)),
                  Json.write(document), "application/json"));
            }
          }
          return status;
        }
        default -> {
          System.err.println("troupe types: expected list, show NAME or apply FILE");
          return 2;
        }
      }
    }
  }
}
