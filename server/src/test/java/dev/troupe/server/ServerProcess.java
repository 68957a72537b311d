package dev.troupe.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
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
  private static final Pattern LISTENING = Pattern.compile("listening on https?://([^:]+):(\\d+)");
  private static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  /**
   * With this system property true ({@code -Dtroupe.test.route-entity-messages=true} on the test
   * run), every server started here sends every entity message through its transport as wire
   * bytes (docs/ARCHITECTURE.md, "Entity messages between nodes"): the server tests then prove
   * the remote path carries what they exercise.
   */
  static final String ROUTE_ENTITY_MESSAGES_PROPERTY = "troupe.test.route-entity-messages";

  private final Process process;
  private final int port;
  private final Path log;

  private ServerProcess(Process process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
  }

  /** {@code serve} on a free port over {@code dataDirectory} (created) with the overrides. */
  private static List<String> serveArguments(Path dataDirectory, String... settingOverrides)
      throws IOException {
    List<String> arguments = new ArrayList<>(List.of("serve", "--data", dataDirectory.toString(),
        "--port", "0"));
    List<String> overrides = new ArrayList<>();
    if (Boolean.getBoolean(ROUTE_ENTITY_MESSAGES_PROPERTY)) {
      overrides.addAll(List.of("troupe.transport.route-entity-messages=true",
          "troupe.transport.encode-local-messages=true"));
    }
    overrides.addAll(List.of(settingOverrides));
    for (String override : overrides) {
      arguments.add("--set");
      arguments.add(override);
    }
    Files.createDirectories(dataDirectory);
    return arguments;
  }

  /** Starts a server on a free port over {@code dataDirectory}; returns once it listens. */
  public static ServerProcess start(Path dataDirectory, String... settingOverrides)
      throws IOException, InterruptedException {
    List<String> arguments = serveArguments(dataDirectory, settingOverrides);
    return launch(arguments);
  }

  /**
   * Starts the data centre "lisbon" with its data under {@code directory}/lisbon, whose one peer
   * "paris" is unreachable (nothing listens on the discard port: every pull from paris fails),
   * the replication secret {@code secret} in the file {@code directory}/secret, a pull backoff of
   * at most 200 ms, and {@code settingOverrides}; returns once it listens. What the tests of the
   * replication routes of one server start.
   */
  public static ServerProcess startLisbonWithUnreachableParis(Path directory, String secret,
      String... settingOverrides) throws IOException, InterruptedException {
    Path secretFile = directory.resolve("secret");
    Files.writeString(secretFile, secret + "\n");
    List<String> settings = new ArrayList<>(List.of(
        "troupe.dc.name=lisbon",
        "troupe.dc.peers=[paris]",
        "troupe.dc.peer-urls.paris=\"http://127.0.0.1:9\"",
        "troupe.replication.secret-file=\"" + secretFile + "\"",
        "troupe.replication.pull-backoff-max-millis=200"));
    settings.addAll(List.of(settingOverrides));
    return start(directory.resolve("lisbon"), settings.toArray(String[]::new));
  }

  /**
   * Starts a server like {@link #start(Path, String...)} with {@code jvmOptions} instead of the
   * default heap, collector and compiler options (e.g. {@code -Xmx512m -XX:+UseG1GC}, the
   * launcher's collector).
   */
  public static ServerProcess startWithJvmOptions(List<String> jvmOptions, Path dataDirectory,
      String... settingOverrides) throws IOException, InterruptedException {
    List<String> arguments = serveArguments(dataDirectory, settingOverrides);
    return launchCommand(javaCommand(jvmOptions, arguments));
  }

  /**
   * Starts {@code troupe ARGUMENTS} (a command that prints "listening on http://HOST:PORT", with
   * {@code --port 0}); returns once it listens.
   */
  public static ServerProcess launch(List<String> arguments)
      throws IOException, InterruptedException {
    return launchCommand(javaCommand(arguments));
  }

  /**
   * Starts {@code troupe ARGUMENTS} like {@link #launch} with {@code jvmOptions} instead of the
   * default heap, collector and compiler options.
   */
  public static ServerProcess launchWithJvmOptions(List<String> jvmOptions, List<String> arguments)
      throws IOException, InterruptedException {
    return launchCommand(javaCommand(jvmOptions, arguments));
  }

  /**
   * Starts a server like {@link #start} whose files may not grow past {@code maxFileKilobytes}
   * ({@code ulimit -f}): a write past it fails with EFBIG ("File too large"), which the JVM and
   * RocksDB meet exactly as they meet a full disk, an I/O error on write, without root or a small
   * file system.
   */
  public static ServerProcess startWithFileSizeLimit(Path dataDirectory, long maxFileKilobytes,
      String... settingOverrides) throws IOException, InterruptedException {
    List<String> arguments = serveArguments(dataDirectory, settingOverrides);
    // RocksDB would extract its 30 MB native library to a temporary file at start, past the
    // limit: load it from a copy made here instead.
    List<String> command = new ArrayList<>(List.of("bash", "-c",
        "ulimit -f " + maxFileKilobytes + " && exec \"$@\"", "bash"));
    List<String> jvmOptions = new ArrayList<>(DEFAULT_JVM_OPTIONS);
    jvmOptions.add("-Djava.library.path=" + rocksLibraryDirectory());
    command.addAll(javaCommand(jvmOptions, arguments));
    return launchCommand(command);
  }

  private static Path rocksLibraryDirectory;

  /** A directory holding RocksDB's native library for this platform, extracted once. */
  private static synchronized Path rocksLibraryDirectory() throws IOException {
    if (rocksLibraryDirectory == null) {
      String name = org.rocksdb.util.Environment.getJniLibraryFileName("rocksdb");
      Path directory = Files.createTempDirectory("troupe-rocksdb-native");
      try (java.io.InputStream library =
          ServerProcess.class.getClassLoader().getResourceAsStream(name)) {
        if (library == null) {
          throw new IllegalStateException(name + " is not on the class path");
        }
        Files.copy(library, directory.resolve(name));
      }
      rocksLibraryDirectory = directory;
    }
    return rocksLibraryDirectory;
  }

  /** The JVM command line that runs {@code troupe ARGUMENTS} from the test class path. */
  private static List<String> javaCommand(List<String> arguments) {
    return javaCommand(DEFAULT_JVM_OPTIONS, arguments);
  }

  /** Heap, collector and compiler of a test server: small and quick to start. */
  private static final List<String> DEFAULT_JVM_OPTIONS =
      List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  /**
   * The class path and class-data-sharing options of every JVM started here, made once per test
   * JVM ({@link #spawnedJvm}).
   *
   * <p>Why: the server module's tests start over 150 servers (153 in one suite run) and more
   * JVMs for CLI commands, and each one loaded and verified the same few thousand classes again:
   * 2.2 s to "listening" without an archive, 1.2 s with one (the fat jar, on the 2-core machine).
   * The JVM cannot archive classes from a directory, so the class directories on the test class
   * path ({@code target/classes}, {@code target/test-classes}) are packed into jars first; then
   * one server is started with {@code -XX:ArchiveClassesAtExit}, used (a write and a read), and
   * stopped, which writes the archive every later JVM maps. If any step fails the JVMs run as
   * before, without an archive: slower, never wrong.
   */
  private record SpawnedJvm(String classPath, List<String> classDataSharingOptions) {}

  private static SpawnedJvm spawnedJvm;

  /** {@code -Dtroupe.test.class-archive=false} starts every JVM without the archive. */
  static final String CLASS_ARCHIVE_PROPERTY = "troupe.test.class-archive";

  private static synchronized SpawnedJvm spawnedJvm() {
    if (spawnedJvm == null) {
      String testClassPath = System.getProperty("java.class.path");
      spawnedJvm = new SpawnedJvm(testClassPath, List.of());
      if (!Boolean.parseBoolean(System.getProperty(CLASS_ARCHIVE_PROPERTY, "true"))) {
        return spawnedJvm;
      }
      try {
        spawnedJvm = withClassArchive(testClassPath);
      } catch (Exception e) {
        System.out.println("test servers run without a class archive: " + e);
      }
    }
    return spawnedJvm;
  }

  private static SpawnedJvm withClassArchive(String testClassPath) throws Exception {
    Path target = Path.of("target").toAbsolutePath();
    // Earlier runs' jars and archives: the classes they hold may be stale.
    try (var earlier = Files.newDirectoryStream(target, "test-server-classes-*")) {
      for (Path directory : earlier) {
        deleteRecursively(directory);
      }
    }
    Path directory = Files.createTempDirectory(target, "test-server-classes-");
    List<String> entries = new ArrayList<>();
    for (String entry : testClassPath.split(java.io.File.pathSeparator)) {
      Path path = Path.of(entry);
      if (Files.isDirectory(path)) {
        Path jar = directory.resolve(entries.size() + ".jar");
        packDirectory(path, jar);
        entries.add(jar.toString());
      } else {
        entries.add(entry);
      }
    }
    String classPath = String.join(java.io.File.pathSeparator, entries);
    Path archive = directory.resolve("classes.jsa");
    Path data = Files.createTempDirectory(directory, "data");
    List<String> options = List.of("-XX:ArchiveClassesAtExit=" + archive, "-Xlog:cds*=off",
        "-Xlog:aot*=off");
    try (ServerProcess server = launchCommand(javaCommand(DEFAULT_JVM_OPTIONS,
        serveArguments(data), new SpawnedJvm(classPath, options)))) {
      server.send("PUT", "/v1/entities/Warm/w/keys/k", "\"v\"");
      server.send("GET", "/v1/entities/Warm/w", null);
    }
    deleteRecursively(data);
    if (!Files.isRegularFile(archive)) {
      throw new IllegalStateException("no archive was written at " + archive);
    }
    return new SpawnedJvm(classPath,
        List.of("-XX:SharedArchiveFile=" + archive, "-Xlog:cds*=off", "-Xlog:aot*=off"));
  }

  private static void packDirectory(Path directory, Path jar) throws IOException {
    try (var out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar));
        var files = Files.walk(directory)) {
      for (Path file : (Iterable<Path>) files.sorted()::iterator) {
        String name = directory.relativize(file).toString()
            .replace(java.io.File.separatorChar, '/');
        if (name.isEmpty()) {
          continue;
        }
        boolean isDirectory = Files.isDirectory(file);
        out.putNextEntry(new java.util.jar.JarEntry(isDirectory ? name + "/" : name));
        if (!isDirectory) {
          Files.copy(file, out);
        }
        out.closeEntry();
      }
    }
  }

  private static void deleteRecursively(Path path) throws IOException {
    try (var paths = Files.walk(path)) {
      for (Path each : (Iterable<Path>) paths.sorted(java.util.Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(each);
      }
    }
  }

  private static List<String> javaCommand(List<String> jvmOptions, List<String> arguments) {
    return javaCommand(jvmOptions, arguments, spawnedJvm());
  }

  private static List<String> javaCommand(List<String> jvmOptions, List<String> arguments,
      SpawnedJvm jvm) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-XX:+IgnoreUnrecognizedVMOptions",
        "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED"));
    command.addAll(jvm.classDataSharingOptions());
    command.addAll(jvmOptions);
    command.addAll(List.of("-cp", jvm.classPath(), "dev.troupe.server.cli.TroupeCli"));
    command.addAll(arguments);
    return command;
  }

  /** A command that ran to its end: its exit status and everything it printed. */
  public record Finished(int exitStatus, String output) {}

  /** Runs {@code troupe ARGUMENTS} (a command that exits by itself) and waits up to two minutes. */
  public static Finished run(List<String> arguments) throws IOException, InterruptedException {
    return run(arguments, java.util.Map.of());
  }

  /** Runs {@code troupe ARGUMENTS} like {@link #run(List)} with {@code environment} added. */
  public static Finished run(List<String> arguments, java.util.Map<String, String> environment)
      throws IOException, InterruptedException {
    Path output = Files.createTempFile("troupe-command", ".log");
    ProcessBuilder builder = new ProcessBuilder(javaCommand(arguments));
    builder.environment().remove("TROUPE_TOKEN");
    builder.environment().putAll(environment);
    Process process = builder.redirectErrorStream(true)
        .redirectOutput(output.toFile()).start();
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
      throw new IllegalStateException("troupe " + arguments + " did not finish within 120 s:\n"
          + Files.readString(output));
    }
    String text = Files.readString(output);
    Files.deleteIfExists(output);
    return new Finished(process.exitValue(), text);
  }

  private static ServerProcess launchCommand(List<String> command)
      throws IOException, InterruptedException {
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

  /** The server process's id. */
  public long pid() {
    return process.pid();
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

  /** Waits for the process to exit by itself; its exit status, or -1 if it still runs. */
  public int awaitExit(long timeoutSeconds) throws InterruptedException {
    return process.waitFor(timeoutSeconds, TimeUnit.SECONDS) ? process.exitValue() : -1;
  }

  /** SIGKILL: no shutdown hook, no flush; what was acknowledged must survive anyway. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    // SIGTERM through the process handle: Process.destroy() also closes this side of the
    // server's output pipe, so the reader stops and whatever the server logs while it shuts down
    // (its drain, its leave) is lost, and its writes to the pipe fail.
    process.toHandle().destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
    }
  }

  /** An HTTP answer: status, parsed JSON body (or the raw text in a string node), headers. */
  public record Answer(int status, JsonNode body, String text, HttpHeaders headers) {
    public String errorCode() {
      return body.path("error").asText(null);
    }

    /** The first value of the header {@code name}, if the answer has it. */
    public java.util.Optional<String> header(String name) {
      return headers.firstValue(name);
    }
  }

  public Answer send(String method, String path, String body) throws IOException, InterruptedException {
    return send(method, path, body, "application/json");
  }

  public Answer send(String method, String path, String body, String contentType)
      throws IOException, InterruptedException {
    return send(baseUrl() + path, method, body, contentType, java.util.Map.of(),
        Duration.ofSeconds(60));
  }

  /**
   * An HTTP request to {@code url} ({@code body} of {@code contentType}, or null for none) with
   * {@code headers}, waiting up to {@code timeout} for the answer.
   */
  public static Answer send(String url, String method, String body, String contentType,
      java.util.Map<String, String> headers, Duration timeout)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url))
        .timeout(timeout)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (body != null && contentType != null) {
      request.header("Content-Type", contentType);
    }
    headers.forEach(request::header);
    HttpResponse<String> response = CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode json;
    try {
      json = Json.parse(response.body());
    } catch (RuntimeException notJson) {
      json = Json.NODES.textNode(response.body());
    }
    return new Answer(response.statusCode(), json, response.body(), response.headers());
  }

  public Answer get(String path) throws IOException, InterruptedException {
    return send("GET", path, null);
  }

  /**
   * {@link #get}, retried as a client following the documented retries would: while the answer is
   * a retryable refusal (503: a partition changing hands, {@code not_owner}, {@code unavailable};
   * 429 {@code overloaded}), every 200 ms up to {@code timeoutMillis}; answers the last answer.
   * For checks after a cluster's membership changed, where sharding may still be moving a
   * partition back to a rejoined member.
   */
  public Answer getRetrying(String path, long timeoutMillis)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(
        timeoutMillis);
    while (true) {
      Answer answer = get(path);
      if ((answer.status() != 503 && answer.status() != 429) || System.nanoTime() > deadline) {
        return answer;
      }
      Thread.sleep(200);
    }
  }

  public static HttpClient client() {
    return CLIENT;
  }
}
