package dev.troupe.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real Troupe server in its own JVM, as a user runs it ({@code troupe serve}), for end-to-end and
 * crash tests. Started with the test classpath; killed with SIGKILL or stopped with SIGTERM.
 */
public final class ServerProcess implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on http://([^:]+):(\\d+)");
  private static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private final Process process;
  private final int port;
  private final Path log;

  private ServerProcess(Process process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
  }

  /** Starts a server on a free port over {@code dataDirectory}; returns once it listens. */
  public static ServerProcess start(Path dataDirectory, String... settingOverrides)
      throws IOException, InterruptedException {
    List<String> arguments = new ArrayList<>(List.of("serve", "--data", dataDirectory.toString(),
        "--port", "0"));
    for (String override : settingOverrides) {
      arguments.add("--set");
      arguments.add(override);
    }
    Files.createDirectories(dataDirectory);
    return launch(arguments);
  }

  /**
   * Starts a server like {@link #start(Path, String...)} with {@code jvmOptions} instead of the
   * default heap, collector and compiler options (e.g. {@code -Xmx512m -XX:+UseParallelGC}, what
   * the launcher runs).
   */
  public static ServerProcess startWithJvmOptions(List<String> jvmOptions, Path dataDirectory,
      String... settingOverrides) throws IOException, InterruptedException {
    List<String> arguments = new ArrayList<>(List.of("serve", "--data", dataDirectory.toString(),
        "--port", "0"));
    for (String override : settingOverrides) {
      arguments.add("--set");
      arguments.add(override);
    }
    Files.createDirectories(dataDirectory);
    return launch(jvmOptions, arguments);
  }

  /**
   * Starts {@code troupe ARGUMENTS} (a command that prints "listening on http://HOST:PORT", with
   * {@code --port 0}); returns once it listens.
   */
  public static ServerProcess launch(List<String> arguments)
      throws IOException, InterruptedException {
    return launch(List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), arguments);
  }

  private static ServerProcess launch(List<String> jvmOptions, List<String> arguments)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-XX:+IgnoreUnrecognizedVMOptions",
        "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED"));
    command.addAll(jvmOptions);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"),
        "dev.troupe.server.cli.TroupeCli"));
    command.addAll(arguments);
    Path log = Files.createTempFile("troupe-server", ".log");
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = lines.readLine()) != null) {
          Files.writeString(log, line + "\n", java.nio.file.StandardOpenOption.APPEND);
          Matcher matcher = LISTENING.matcher(line);
          if (matcher.find()) {
            port.complete(Integer.parseInt(matcher.group(2)));
          }
        }
      } catch (IOException ignored) {
        // The process ended.
      }
      port.completeExceptionally(new IllegalStateException("server exited before listening"));
    }, "server-output");
    reader.setDaemon(true);
    reader.start();
    try {
      return new ServerProcess(process, port.get(60, TimeUnit.SECONDS), log);
    } catch (Exception e) {
      process.destroyForcibly();
      throw new IllegalStateException("server did not start: " + e + "\n" + Files.readString(log), e);
    }
  }

  public int port() {
    return port;
  }

  public String baseUrl() {
    return "http://127.0.0.1:" + port;
  }

  /** Whether the server process is still running (it did not crash or run out of memory). */
  public boolean isAlive() {
    return process.isAlive();
  }

  public String log() throws IOException {
    return Files.readString(log);
  }

  /** SIGKILL: no shutdown hook, no flush; what was acknowledged must survive anyway. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
    }
  }

  /** An HTTP answer: status and parsed JSON body (or the raw text in a string node). */
  public record Answer(int status, JsonNode body, String text) {
    public String errorCode() {
      return body.path("error").asText(null);
    }
  }

  public Answer send(String method, String path, String body) throws IOException, InterruptedException {
    return send(method, path, body, "application/json");
  }

  public Answer send(String method, String path, String body, String contentType)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(baseUrl() + path))
        .timeout(Duration.ofSeconds(60))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (body != null && contentType != null) {
      request.header("Content-Type", contentType);
    }
    HttpResponse<String> response = CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode json;
    try {
      json = Json.parse(response.body());
    } catch (RuntimeException notJson) {
      json = Json.NODES.textNode(response.body());
    }
    return new Answer(response.statusCode(), json, response.body());
  }

  public Answer get(String path) throws IOException, InterruptedException {
    return send("GET", path, null);
  }

  public static HttpClient client() {
    return CLIENT;
  }
}
