package dev.troupe.storage.postgres;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A throwaway PostgreSQL server for benchmarks and tests: {@code initdb} in a new temporary
 * directory, started with {@code pg_ctl} on 127.0.0.1 and a free port, stopped and deleted by
 * {@link #close()} (or by a shutdown hook if the JVM exits first). It lives in storage so that the
 * tests of {@link dev.troupe.storage.postgres.PostgresDisk} (and anything that runs Troupe on
 * PostgreSQL) can start one; the benchmark baseline (server, bench) uses it too.
 *
 * <p>An instance that backs Troupe itself is started with {@link #startForTroupe}: {@code initdb
 * --data-checksums}, PostgreSQL's own page checksums, so that a damaged data page fails the read
 * that meets it (an error, which the disk reports) instead of being served, as RocksDB's block
 * checksums do for {@link dev.troupe.storage.RocksDisk}. The benchmark baseline keeps the
 * defaults it was measured with ({@link #start}).
 *
 * <p>Durability is PostgreSQL's default and Troupe's: {@code fsync = on}, {@code
 * synchronous_commit = on}, {@code full_page_writes = on}. Every transaction is SERIALIZABLE by
 * default ({@code default_transaction_isolation}). The only tuning is what any operator would do
 * for a benchmark that keeps its data set in memory: shared buffers large enough for it.
 *
 * <p>PostgreSQL refuses to run as root; when this JVM runs as root the binaries are run as the
 * {@code postgres} user through {@code runuser}, and the directory is handed to that user.
 */
public final class PostgresInstance implements AutoCloseable {
  private static final String HOST = "127.0.0.1";
  private static final String SERVER_USER = "postgres";
  private static final long COMMAND_TIMEOUT_SECONDS = 120;

  private final Path binaries;
  private final Path directory;
  private final int port;
  private final boolean asServerUser;
  private final Thread shutdownHook;
  private boolean stopped;

  private PostgresInstance(Path binaries, Path directory, int port, boolean asServerUser) {
    this.binaries = binaries;
    this.directory = directory;
    this.port = port;
    this.asServerUser = asServerUser;
    this.shutdownHook = new Thread(this::stopQuietly, "postgres-instance-stop");
  }

  /**
   * Creates and starts a new instance.
   *
   * @param sharedBuffersMegabytes PostgreSQL's {@code shared_buffers}
   * @throws PostgresUnavailableException if no PostgreSQL binaries are found or the server fails
   *     to start (its log is quoted)
   */
  public static PostgresInstance start(int sharedBuffersMegabytes) {
    return start(sharedBuffersMegabytes, false);
  }

  /**
   * Creates and starts a new instance for Troupe's own storage: as {@link #start}, with page
   * checksums ({@code initdb --data-checksums}). Troupe's disk sets the isolation of every
   * transaction itself, so the server's default isolation does not matter to it.
   */
  public static PostgresInstance startForTroupe(int sharedBuffersMegabytes) {
    return start(sharedBuffersMegabytes, true);
  }

  private static PostgresInstance start(int sharedBuffersMegabytes, boolean dataChecksums) {
    Path binaries = findBinaries();
    boolean asServerUser = "root".equals(System.getProperty("user.name"));
    Path directory;
    int port;
    try {
      directory = Files.createTempDirectory("troupe-postgres-");
      if (asServerUser) {
        UserPrincipal owner = directory.getFileSystem().getUserPrincipalLookupService()
            .lookupPrincipalByName(SERVER_USER);
        Files.setOwner(directory, owner);
      }
      port = freePort();
    } catch (IOException e) {
      throw new PostgresUnavailableException("cannot prepare a directory for PostgreSQL: " + e, e);
    }
    PostgresInstance instance = new PostgresInstance(binaries, directory, port, asServerUser);
    Runtime.getRuntime().addShutdownHook(instance.shutdownHook);
    try {
      List<String> initdb = new ArrayList<>(List.of("-D", instance.dataDirectory().toString(),
          "-U", SERVER_USER, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"));
      if (dataChecksums) {
        initdb.add("--data-checksums");
      }
      instance.run("initdb", initdb.toArray(String[]::new));
      Files.writeString(instance.dataDirectory().resolve("postgresql.auto.conf"),
          String.join("\n",
              "listen_addresses = '" + HOST + "'",
              "port = " + port,
              "unix_socket_directories = '" + directory + "'",
              "max_connections = 300",
              "shared_buffers = '" + sharedBuffersMegabytes + "MB'",
              "fsync = on",
              "synchronous_commit = on",
              "full_page_writes = on",
              "default_transaction_isolation = 'serializable'",
              "max_pred_locks_per_transaction = 256",
              ""));
      instance.startServer();
      return instance;
    } catch (RuntimeException | IOException e) {
      String log = instance.logTail();
      instance.close();
      throw new PostgresUnavailableException("PostgreSQL did not start: " + e.getMessage()
          + (log.isEmpty() ? "" : "\nits log ends with:\n" + log), e);
    }
  }

  private void startServer() {
    run("pg_ctl", "-D", dataDirectory().toString(), "-l",
        directory.resolve("server.log").toString(), "-w", "-t", "60", "start");
  }

  /**
   * Stops the server the way a power loss or a kill -9 would: {@code pg_ctl stop -m immediate}
   * (every server process quits at once, without a checkpoint; the next start replays the
   * write-ahead log). The data directory stays; {@link #restart} starts the server on it again.
   */
  public synchronized void crash() {
    run("pg_ctl", "-D", dataDirectory().toString(), "-m", "immediate", "-w", "-t", "60", "stop");
  }

  /** Starts the server again on its data directory (after {@link #crash}), on the same port. */
  public synchronized void restart() {
    startServer();
  }

  /** The JDBC URL of the {@code postgres} database as the {@code postgres} superuser. */
  public String jdbcUrl() {
    return "jdbc:postgresql://" + HOST + ":" + port + "/postgres?user=" + SERVER_USER;
  }

  /** The JDBC URL of database {@code database} (see {@link #createDatabase}) as the superuser. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://" + HOST + ":" + port + "/" + database + "?user=" + SERVER_USER;
  }

  /**
   * Creates a new, empty database named {@code database} ({@code createdb}): a test's own, so
   * that tests sharing one server start from nothing.
   */
  public void createDatabase(String database) {
    run("createdb", "-h", HOST, "-p", Integer.toString(port), "-U", SERVER_USER, database);
  }

  public int port() {
    return port;
  }

  /** The server's data directory (tests that damage a data file on purpose reach it here). */
  public Path dataDirectory() {
    return directory.resolve("data");
  }

  /** The last lines of the server's log, or "" if there is none. */
  public String logTail() {
    Path log = directory.resolve("server.log");
    try {
      if (!Files.exists(log)) {
        return "";
      }
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "";
    }
  }

  /** Stops the server ({@code pg_ctl stop -m fast}) and deletes its directory. */
  @Override
  public synchronized void close() {
    stopQuietly();
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // The hook is running or about to: it stops the server itself.
    }
  }

  private synchronized void stopQuietly() {
    if (stopped) {
      return;
    }
    stopped = true;
    if (Files.exists(dataDirectory().resolve("postmaster.pid"))) {
      try {
        run("pg_ctl", "-D", dataDirectory().toString(), "-m", "fast", "-w", "-t", "60", "stop");
      } catch (RuntimeException e) {
        System.err.println("could not stop PostgreSQL in " + directory + ": " + e.getMessage());
      }
    }
    deleteRecursively(directory);
  }

  /** Runs one PostgreSQL binary (as the server user when this JVM is root) and waits for it. */
  private void run(String program, String... arguments) {
    List<String> command = new ArrayList<>();
    if (asServerUser) {
      command.addAll(List.of("runuser", "-u", SERVER_USER, "--"));
    }
    command.add(binaries.resolve(program).toString());
    command.addAll(List.of(arguments));
    try {
      Process process = new ProcessBuilder(command)
          .redirectErrorStream(true)
          .directory(directory.toFile())
          .start();
      process.getOutputStream().close();
      byte[] output = process.getInputStream().readAllBytes();
      if (!process.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new PostgresUnavailableException(program + " did not finish in "
            + COMMAND_TIMEOUT_SECONDS + " s");
      }
      if (process.exitValue() != 0) {
        throw new PostgresUnavailableException(program + " failed with exit code "
            + process.exitValue() + ": " + new String(output).strip());
      }
    } catch (IOException e) {
      throw new PostgresUnavailableException("cannot run " + command + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PostgresUnavailableException("interrupted while running " + program, e);
    }
  }

  /**
   * The directory holding {@code initdb} and {@code pg_ctl}: {@code $TROUPE_POSTGRES_BIN} if set,
   * else the newest {@code /usr/lib/postgresql/N/bin} (Debian's layout).
   */
  static Path findBinaries() {
    String configured = System.getenv("TROUPE_POSTGRES_BIN");
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    Path debian = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(debian)) {
      try (Stream<Path> versions = Files.list(debian)) {
        return versions
            .filter(version -> Files.isExecutable(version.resolve("bin").resolve("initdb")))
            .max(Comparator.comparingInt(PostgresInstance::majorVersion))
            .map(version -> version.resolve("bin"))
            .orElseThrow(() -> new PostgresUnavailableException(
                "no PostgreSQL binaries under " + debian + "; set TROUPE_POSTGRES_BIN"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new PostgresUnavailableException(
        "no PostgreSQL binaries found; set TROUPE_POSTGRES_BIN to the directory of initdb");
  }

  private static int majorVersion(Path versionDirectory) {
    try {
      return Integer.parseInt(versionDirectory.getFileName().toString());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return socket.getLocalPort();
    }
  }

  private static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      System.err.println("could not delete " + root + ": " + e.getMessage());
    }
  }

  /** PostgreSQL is not installed or would not start: an environmental failure, not a bug. */
  public static final class PostgresUnavailableException extends RuntimeException {
    PostgresUnavailableException(String message) {
      super(message);
    }

    PostgresUnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
