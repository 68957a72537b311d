package dev.troupe.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Several data centres as real server processes on loopback ({@code troupe serve --dc NAME}), for
 * the server's multi-DC integration tests. Every DC pulls every other one through a {@link
 * TcpProxy} of its own (one per directed link puller → peer), so a test can cut, reset or slow one
 * direction of one link; all share one replication secret file.
 *
 * <p>A killed DC restarts on its data directory on a new port, and every proxy leading to it is
 * retargeted there: its peers' configuration does not change, as with a real DC behind a stable
 * address.
 *
 * <p>{@link #close} kills every process it started (every incarnation, SIGKILL: nothing to wait
 * for) and closes every proxy, also when {@link Builder#start} fails half-way; {@link #printLogs}
 * prints each DC's log, earlier incarnations' included, for a test to call when it fails.
 *
 * <p>Concurrency: {@link #send}, {@link #proxy} and {@link #server} are safe from any thread;
 * {@link #kill}, {@link #restart} and {@link #close} are the test's own thread's.
 */
public final class DataCentreCluster implements AutoCloseable {
  private final List<String> names;
  private final Path directory;
  private final Path secretFile;
  private final List<String> settings;
  private final Map<String, List<String>> extraArguments;
  private final java.util.Set<String> deferred;
  private final List<String> jvmOptions;
  private final Duration requestTimeout;
  /** proxies.get(puller).get(peer): the link puller → peer. */
  private final Map<String, Map<String, TcpProxy>> proxies = new LinkedHashMap<>();
  private final Map<String, ServerProcess> servers = new ConcurrentHashMap<>();
  /** Every process started, killed ones included: their logs, and what close must stop. */
  private final Map<String, List<ServerProcess>> incarnations = new ConcurrentHashMap<>();

  private DataCentreCluster(Builder builder) throws IOException {
    this.names = List.copyOf(builder.names);
    this.directory = builder.directory;
    this.secretFile = directory.resolve("replication-secret");
    this.settings = List.copyOf(builder.settings);
    this.extraArguments = Map.copyOf(builder.extraArguments);
    this.deferred = java.util.Set.copyOf(builder.deferred);
    this.jvmOptions = List.copyOf(builder.jvmOptions);
    this.requestTimeout = builder.requestTimeout;
    Files.createDirectories(directory);
    Files.writeString(secretFile, builder.secret);
    for (String puller : names) {
      Map<String, TcpProxy> links = new LinkedHashMap<>();
      proxies.put(puller, links);
      for (String peer : names) {
        if (!peer.equals(puller)) {
          links.put(peer, TcpProxy.start(0));
        }
      }
    }
  }

  /** A cluster whose DCs keep their data, logs aside, under {@code directory}. */
  public static Builder builder(Path directory) {
    return new Builder(directory);
  }

  /** What to start: names, settings, arguments; {@link #start} starts it. */
  public static final class Builder {
    private final Path directory;
    private final List<String> names = new ArrayList<>();
    private final List<String> settings = new ArrayList<>();
    private final java.util.Set<String> deferred = new java.util.HashSet<>();
    private final Map<String, List<String>> extraArguments = new LinkedHashMap<>();
    private List<String> jvmOptions =
        List.of("-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
    private String secret = "data-centre-cluster-secret-0123456789";
    private Duration requestTimeout = Duration.ofSeconds(60);

    private Builder(Path directory) {
      this.directory = directory;
    }

    /**
     * DCs among {@link #dataCentres} that {@link #start} does not start, and that the others do
     * not list as peers: DCs added to the running set later ({@link
     * DataCentreCluster#startDeferred}, then {@code troupe peer add} on the others with {@link
     * DataCentreCluster#proxy}'s URL). A deferred DC lists every other.
     */
    public Builder deferred(String... dataCentres) {
      deferred.addAll(List.of(dataCentres));
      return this;
    }

    /** The DCs, by name; each has every other one as a peer. */
    public Builder dataCentres(String... dataCentres) {
      names.addAll(List.of(dataCentres));
      return this;
    }

    /** {@code --set SETTING} for every DC, e.g. {@code troupe.replication.pull-interval-millis=50}. */
    public Builder settings(String... overrides) {
      settings.addAll(List.of(overrides));
      return this;
    }

    /** More {@code serve} arguments for {@code dataCentre} alone (after the common ones). */
    public Builder arguments(String dataCentre, String... arguments) {
      extraArguments.computeIfAbsent(dataCentre, name -> new ArrayList<>())
          .addAll(List.of(arguments));
      return this;
    }

    /** The server JVMs' heap, collector and compiler options. */
    public Builder jvmOptions(String... options) {
      jvmOptions = List.of(options);
      return this;
    }

    /** The shared replication secret (at least 32 characters). */
    public Builder secret(String value) {
      secret = value;
      return this;
    }

    /** How long {@link DataCentreCluster#send} waits for an answer. */
    public Builder requestTimeout(Duration timeout) {
      requestTimeout = timeout;
      return this;
    }

    /**
     * Starts every DC at once and returns when all listen, with every proxy pointing at its DC; if
     * one does not start, stops the others and throws.
     */
    public DataCentreCluster start() throws Exception {
      if (names.size() < 2 || names.stream().distinct().count() != names.size()) {
        throw new IllegalArgumentException("a cluster needs two or more distinct DCs: " + names);
      }
      if (!names.containsAll(extraArguments.keySet())) {
        throw new IllegalArgumentException("arguments for unknown DCs: " + extraArguments.keySet());
      }
      DataCentreCluster cluster = new DataCentreCluster(this);
      try {
        cluster.startAll();
        return cluster;
      } catch (Throwable failure) {
        cluster.printLogs(8_000);
        cluster.close();
        throw failure;
      }
    }
  }

  private void startAll() throws Exception {
    Map<String, Exception> failures = new ConcurrentHashMap<>();
    List<Thread> starting = new ArrayList<>();
    for (String name : names) {
      if (deferred.contains(name)) {
        continue;
      }
      starting.add(Thread.ofPlatform().name("start-" + name).start(() -> {
        try {
          launch(name);
        } catch (Exception e) {
          failures.put(name, e);
        }
      }));
    }
    for (Thread thread : starting) {
      thread.join();
    }
    if (!failures.isEmpty()) {
      IllegalStateException failure =
          new IllegalStateException("data centres did not start: " + failures.keySet());
      failures.values().forEach(failure::addSuppressed);
      throw failure;
    }
  }

  /** {@code troupe serve --dc NAME} with every peer reached through this DC's own proxies. */
  private void launch(String name) throws Exception {
    Path data = directory.resolve(name);
    Files.createDirectories(data);
    List<String> arguments = new ArrayList<>(List.of("serve", "--data", data.toString(),
        "--port", "0", "--dc", name, "--replication-secret-file", secretFile.toString()));
    for (Map.Entry<String, TcpProxy> link : proxies.get(name).entrySet()) {
      if (deferred.contains(link.getKey()) && !deferred.contains(name)) {
        continue; // joins later: added at runtime
      }
      arguments.add("--peer");
      arguments.add(link.getKey() + "=" + link.getValue().url());
    }
    for (String setting : settings) {
      arguments.add("--set");
      arguments.add(setting);
    }
    arguments.addAll(extraArguments.getOrDefault(name, List.of()));
    ServerProcess server = ServerProcess.launchWithJvmOptions(jvmOptions, arguments);
    incarnations.computeIfAbsent(name, key -> new CopyOnWriteArrayList<>()).add(server);
    servers.put(name, server);
    for (Map<String, TcpProxy> links : proxies.values()) {
      TcpProxy proxy = links.get(name);
      if (proxy != null) {
        proxy.retarget(server.port());
      }
    }
  }

  /** The DCs' names, in the order given. */
  public List<String> names() {
    return names;
  }

  /** The running (or last killed) server of {@code dataCentre}. */
  public ServerProcess server(String dataCentre) {
    ServerProcess server = servers.get(dataCentre);
    if (server == null) {
      throw new IllegalArgumentException("no data centre " + dataCentre);
    }
    return server;
  }

  /** The proxy of the link {@code puller} → {@code peer}: cut, heal, reset, add latency. */
  public TcpProxy proxy(String puller, String peer) {
    TcpProxy proxy = proxies.getOrDefault(puller, Map.of()).get(peer);
    if (proxy == null) {
      throw new IllegalArgumentException("no link " + puller + " → " + peer);
    }
    return proxy;
  }

  /** Starts a DC the builder {@linkplain Builder#deferred deferred}; returns once it listens. */
  public void startDeferred(String dataCentre) throws Exception {
    if (!deferred.contains(dataCentre)) {
      throw new IllegalArgumentException(dataCentre + " was not deferred");
    }
    launch(dataCentre);
  }

  /** The data directory of {@code dataCentre}. */
  public Path dataDirectory(String dataCentre) {
    return directory.resolve(dataCentre);
  }

  /** SIGKILL of {@code dataCentre}'s server: no shutdown hook, no flush. */
  public void kill(String dataCentre) throws InterruptedException {
    server(dataCentre).kill();
  }

  /**
   * Starts {@code dataCentre} again on its data directory (a new port; the proxies leading to it
   * follow); returns once it listens. Kills the running server first if there is one.
   */
  public void restart(String dataCentre) throws Exception {
    server(dataCentre).kill();
    launch(dataCentre);
  }

  /** {@link #send(String, String, String, String, Map)} without extra headers. */
  public ServerProcess.Answer send(String dataCentre, String method, String path, String body)
      throws IOException, InterruptedException {
    return send(dataCentre, method, path, body, Map.of());
  }

  /**
   * An HTTP request to {@code dataCentre}'s server ({@code body} JSON, or null for none) with
   * {@code headers}; throws if the server cannot be reached (e.g. killed).
   */
  public ServerProcess.Answer send(String dataCentre, String method, String path, String body,
      Map<String, String> headers) throws IOException, InterruptedException {
    return ServerProcess.send(server(dataCentre).baseUrl() + path, method, body,
        "application/json", headers, requestTimeout);
  }

  /** The header carrying a causal token, or none for a null or empty token. */
  public static Map<String, String> causalToken(String token) {
    return token == null || token.isEmpty() ? Map.of() : Map.of("Troupe-Causal-Token", token);
  }

  /**
   * An entity's state without its hidden keys ('$...', e.g. replica markers, which differ per
   * DC): what must be the same in every DC once they converged.
   */
  public static JsonNode visibleState(JsonNode state) {
    ObjectNode copy = Json.NODES.objectNode();
    Iterator<Map.Entry<String, JsonNode>> fields = state.fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> field = fields.next();
      if (!field.getKey().startsWith("$")) {
        copy.set(field.getKey(), field.getValue());
      }
    }
    return copy;
  }

  /** A client thread's pause: an interrupt ends it early and stays set for the caller to see. */
  public static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Prints the last {@code lastCharacters} of every DC's log, each earlier incarnation's too. */
  public void printLogs(int lastCharacters) {
    for (String name : names) {
      List<ServerProcess> started = incarnations.getOrDefault(name, List.of());
      for (int index = 0; index < started.size(); index++) {
        String log;
        try {
          log = started.get(index).log();
        } catch (IOException e) {
          log = "(unreadable: " + e + ")";
        }
        System.out.println("log of " + name + (started.size() > 1 ? " #" + (index + 1) : "")
            + " (last " + lastCharacters + " characters):\n"
            + log.substring(Math.max(0, log.length() - lastCharacters)));
      }
    }
  }

  /** Whether any process this cluster started still runs (none should after {@link #close}). */
  public boolean anyAlive() {
    return incarnations.values().stream().flatMap(List::stream).anyMatch(ServerProcess::isAlive);
  }

  /** Kills every server process started and closes every proxy; leaves the data directories. */
  @Override
  public void close() {
    for (List<ServerProcess> started : incarnations.values()) {
      for (ServerProcess server : started) {
        try {
          server.kill();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    for (Map<String, TcpProxy> links : proxies.values()) {
      links.values().forEach(TcpProxy::close);
    }
  }
}
