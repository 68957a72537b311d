package dev.troupe.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A Troupe server in its own JVM, started as the {@code troupe} launcher starts it: the current
 * JVM's {@code java}, the launcher's JVM flags, this JVM's class path (the fat jar when run from
 * it, the module class path in tests) and {@code serve --data DIR --port P}. Its output goes to a
 * log file, quoted when something goes wrong.
 */
final class TroupeProcess implements AutoCloseable {
  /** The flags ./troupe passes to every JVM it starts (besides class data sharing, below). */
  static final List<String> LAUNCHER_JVM_FLAGS = List.of("-XX:+IgnoreUnrecognizedVMOptions",
      "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED");
  /**
   * The collector ./troupe selects unless its extra flags select one (the JVM refuses two); here
   * unless the extra JVM flags do ({@code --server-jvm-option=-XX:+UseParallelGC}).
   */
  static final String LAUNCHER_COLLECTOR = "-XX:+UseG1GC";
  private static final Pattern COLLECTOR_FLAG =
      Pattern.compile("-XX:\\+Use(Serial|Parallel|G1|Z|Shenandoah|Epsilon)GC");
  private static final String MAIN_CLASS = "dev.troupe.server.cli.TroupeCli";
  private static final String HOST = "127.0.0.1";
  private static final long HEALTH_POLL_MILLIS = 5;

  private final Process process;
  private final long startNanos;
  private final int port;
  private final Path log;
  /**
   * Stops the server if this JVM exits without closing it (Ctrl-C or SIGTERM on a benchmark):
   * before, each such server ran on, orphaned, taking CPU and disk from whatever ran next (issue
   * 20, sixth session: four servers of stopped runs measured beside a new one).
   */
  private final Thread stopAtExit;

  private TroupeProcess(Process process, long startNanos, int port, Path log) {
    this.process = process;
    this.startNanos = startNanos;
    this.port = port;
    this.log = log;
    this.stopAtExit = new Thread(() -> {
      process.destroy();
      try {
        if (!process.waitFor(STOP_AT_EXIT_SECONDS, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
      }
    }, "stop-troupe-server-" + process.pid());
    Runtime.getRuntime().addShutdownHook(stopAtExit);
  }

  /** This server is being stopped here: the JVM's exit need not stop it. */
  private void forgetStopAtExit() {
    try {
      Runtime.getRuntime().removeShutdownHook(stopAtExit);
    } catch (IllegalStateException exiting) {
      // The JVM is exiting: the hook stops the server as well.
    }
  }

  /** How long a server stopped as this JVM exits gets to shut down cleanly before SIGKILL. */
  private static final long STOP_AT_EXIT_SECONDS = 20;

  /**
   * Starts a server over {@code dataDirectory} on a free port, logging to {@code log}; {@code
   * extraJvmFlags} follow the launcher's flags.
   */
  static TroupeProcess start(Path dataDirectory, Path log, List<String> extraJvmFlags)
      throws IOException {
    return start(dataDirectory, log, extraJvmFlags, List.of());
  }

  /**
   * As {@link #start(Path, Path, List)}, with {@code settingOverrides} ({@code PATH=VALUE}, e.g.
   * {@code troupe.http.request-admission.adaptive=false}) passed as {@code --set}.
   */
  static TroupeProcess start(Path dataDirectory, Path log, List<String> extraJvmFlags,
      List<String> settingOverrides) throws IOException {
    Files.createDirectories(dataDirectory);
    List<String> command = new ArrayList<>(List.of("serve", "--data", dataDirectory.toString()));
    for (String override : settingOverrides) {
      command.add("--set");
      command.add(override);
    }
    return launch(List.of(), command, log, classDataSharingFlags(), extraJvmFlags);
  }

  /**
   * Starts {@code serve --data DIR} followed by {@code serveArguments} (e.g. {@code --dc NAME
   * --peer NAME=URL}), with the launcher's flags and class data sharing like {@link #start}; the
   * command line is prefixed by {@code commandPrefix} (e.g. {@code nice -n 19}; empty: none).
   */
  static TroupeProcess serve(Path dataDirectory, Path log, List<String> extraJvmFlags,
      List<String> serveArguments, List<String> commandPrefix) throws IOException {
    Files.createDirectories(dataDirectory);
    List<String> command = new ArrayList<>(List.of("serve", "--data", dataDirectory.toString()));
    command.addAll(serveArguments);
    return launch(commandPrefix, command, log, classDataSharingFlags(), extraJvmFlags);
  }

  /**
   * Starts {@code troupe COMMAND... --host 127.0.0.1 --port P} on a free port P, for any command
   * that serves HTTP ({@code serve-postgres}, {@code serve-bare}), with the launcher's JVM flags.
   */
  static TroupeProcess launch(List<String> commandAndOptions, Path log,
      List<String> extraJvmFlags) throws IOException {
    return launch(List.of(), commandAndOptions, log, List.of(), extraJvmFlags);
  }

  private static TroupeProcess launch(List<String> commandPrefix,
      List<String> commandAndOptions, Path log, List<String> classDataSharing,
      List<String> extraJvmFlags) throws IOException {
    int port = freePort();
    List<String> command = new ArrayList<>(commandPrefix);
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(LAUNCHER_JVM_FLAGS);
    if (extraJvmFlags.stream().noneMatch(flag -> COLLECTOR_FLAG.matcher(flag).matches())) {
      command.add(LAUNCHER_COLLECTOR);
    }
    command.addAll(classDataSharing);
    command.addAll(extraJvmFlags);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), MAIN_CLASS));
    command.addAll(commandAndOptions);
    command.addAll(List.of("--host", HOST, "--port", Integer.toString(port)));
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    long startNanos = System.nanoTime();
    return new TroupeProcess(builder.start(), startNanos, port, log);
  }

  /**
   * When running from the fat jar, the class-data-sharing archive {@code ./troupe serve} uses (next
   * to the jar), so a server started here starts as fast as one started by the launcher.
   */
  private static List<String> classDataSharingFlags() {
    String classPathText = System.getProperty("java.class.path");
    if (classPathText.contains(java.io.File.pathSeparator) || !classPathText.endsWith(".jar")) {
      return List.of(); // not the fat jar (tests run on the module class path)
    }
    Path classPath = Path.of(classPathText).toAbsolutePath();
    return List.of("-XX:SharedArchiveFile=" + classPath.getParent().resolve("troupe-serve.jsa"),
        "-XX:+AutoCreateSharedArchive", "-Xlog:cds=off,cds+dynamic=off");
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return socket.getLocalPort();
    }
  }

  int port() {
    return port;
  }

  /** The operating system's id of the server process (for its CPU time in /proc). */
  long pid() {
    return process.pid();
  }

  /** Whether the server process is still running. */
  boolean isAlive() {
    return process.isAlive();
  }

  /** A new connection to this server (connects on first use). */
  HttpConnection connect() {
    return new HttpConnection(HOST, port);
  }

  /** Nanoseconds since the process was started. */
  long nanosSinceStart() {
    return System.nanoTime() - startNanos;
  }

  /**
   * Polls {@code GET /v1/health} until it answers 200; returns the seconds from process start.
   *
   * @throws BenchmarkException if the process exits or {@code timeout} passes first
   */
  double awaitHealthy(Duration timeout) throws IOException, InterruptedException {
    long deadline = startNanos + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new BenchmarkException("the server exited with code " + process.exitValue()
            + " before answering /v1/health; its log ends with:\n" + logTail());
      }
      try (HttpConnection connection = connect()) {
        if (connection.get("/v1/health").status() == 200) {
          return nanosSinceStart() / 1e9;
        }
      } catch (IOException notListeningYet) {
        // Refused until the server binds its port; keep polling.
      }
      Thread.sleep(HEALTH_POLL_MILLIS);
    }
    throw new BenchmarkException("the server did not answer /v1/health within "
        + timeout.toSeconds() + " s; its log ends with:\n" + logTail());
  }

  /** The last lines of the server's output. */
  String logTail() throws IOException {
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
  }

  /** SIGKILL: no shutdown hook runs, nothing is flushed; what was acknowledged must survive. */
  void kill() throws InterruptedException {
    forgetStopAtExit();
    process.destroyForcibly();
    process.waitFor(60, TimeUnit.SECONDS);
  }

  /**
   * SIGTERM, letting the server shut down cleanly; SIGKILL if it has not within 60 s or if this
   * thread is interrupted while waiting.
   */
  @Override
  public void close() {
    forgetStopAtExit();
    process.destroy();
    try {
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        kill();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
