package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.proxy.LoopbackProxy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Several data centres (DCs) on loopback for a benchmark, each a Troupe server process of its own
 * ({@code serve --dc NAME --peer NAME=URL ... --replication-secret-file F}), as an operator runs
 * them. Every DC reaches every peer through a {@link LoopbackProxy} of its own (puller to peer),
 * which adds the configured one-way latency in each direction: the round trip between two DCs is
 * twice that.
 *
 * <p>Peers' processes may run under a higher niceness ({@code nice -n N}): on one machine the
 * peers' applying competes for the CPU with the DC measured, which in a real deployment runs on
 * machines of its own.
 */
final class DataCentreSet implements AutoCloseable {
  /** The names given to the DCs, in order; the first is the one the benchmarks load. */
  static final List<String> NAMES = List.of("a", "b", "c", "d", "e");
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration LINKS_TIMEOUT = Duration.ofSeconds(60);
  /** Settings every DC of a benchmark runs with: links come up quickly after the start. */
  private static final List<String> SETTINGS = List.of(
      "troupe.replication.pull-backoff-initial-millis=50",
      "troupe.replication.pull-backoff-max-millis=500");

  private final Map<String, TroupeProcess> processes = new LinkedHashMap<>();
  private final List<LoopbackProxy> proxies = new ArrayList<>();

  private DataCentreSet() {}

  /**
   * Starts {@code count} DCs named a, b, ... with their data and logs under {@code work}, links
   * of {@code oneWayMillis} each way, {@code settings} ({@code PATH=VALUE}) on every DC, and
   * returns once every DC answers and every link has completed a pull.
   *
   * @param peerNiceness niceness of every DC but the first (0: the same as this JVM's)
   */
  static DataCentreSet start(TemporaryDirectory work, int count, long oneWayMillis,
      List<String> settings, List<String> jvmFlags, int peerNiceness) throws Exception {
    if (count < 2 || count > NAMES.size()) {
      throw new IllegalArgumentException("between 2 and " + NAMES.size()
          + " data centres, not " + count);
    }
    DataCentreSet set = new DataCentreSet();
    try {
      Path secret = work.resolve("replication-secret");
      Files.createDirectories(secret.getParent());
      Files.writeString(secret, SecuredAccess.mint().token());
      List<String> names = NAMES.subList(0, count);
      /** proxies.get(puller).get(peer): the link puller -> peer. */
      Map<String, Map<String, LoopbackProxy>> links = new LinkedHashMap<>();
      for (String puller : names) {
        Map<String, LoopbackProxy> fromPuller = new LinkedHashMap<>();
        for (String peer : names) {
          if (!peer.equals(puller)) {
            LoopbackProxy proxy = LoopbackProxy.start(oneWayMillis, 0);
            set.proxies.add(proxy);
            fromPuller.put(peer, proxy);
          }
        }
        links.put(puller, fromPuller);
      }
      for (String name : names) {
        List<String> arguments = new ArrayList<>(List.of("--dc", name,
            "--replication-secret-file", secret.toString()));
        links.get(name).forEach((peer, proxy) -> {
          arguments.add("--peer");
          arguments.add(peer + "=" + proxy.url());
        });
        List<String> all = new ArrayList<>(SETTINGS);
        all.addAll(settings);
        for (String setting : all) {
          arguments.add("--set");
          arguments.add(setting);
        }
        List<String> prefix = name.equals(names.getFirst()) || peerNiceness == 0
            ? List.of() : List.of("nice", "-n", Integer.toString(peerNiceness));
        set.processes.put(name, TroupeProcess.serve(work.resolve("dc-" + name),
            work.resolve("dc-" + name + ".log"), jvmFlags, arguments, prefix));
      }
      for (Map.Entry<String, TroupeProcess> process : set.processes.entrySet()) {
        process.getValue().awaitHealthy(START_TIMEOUT);
        for (Map<String, LoopbackProxy> fromPuller : links.values()) {
          LoopbackProxy toThis = fromPuller.get(process.getKey());
          if (toThis != null) {
            toThis.retarget(process.getValue().port());
          }
        }
      }
      set.awaitLinksUp();
      return set;
    } catch (Exception | Error e) {
      set.close();
      throw e;
    }
  }

  TroupeProcess process(String name) {
    return processes.get(name);
  }

  List<String> names() {
    return List.copyOf(processes.keySet());
  }

  /** {@code GET /v1/replication/status} of {@code name}. */
  JsonNode status(String name) throws IOException {
    try (HttpConnection connection = processes.get(name).connect()) {
      HttpConnection.Response response = connection.get("/v1/replication/status");
      if (response.status() != 200) {
        throw new BenchmarkException("the replication status of " + name + " answered "
            + response.status() + ": " + response.text());
      }
      return Json.parse(response.body());
    }
  }

  /** Waits until every DC's puller of every peer has pulled successfully. */
  private void awaitLinksUp() throws Exception {
    long deadline = System.nanoTime() + LINKS_TIMEOUT.toNanos();
    while (true) {
      String down = null;
      for (String name : processes.keySet()) {
        for (JsonNode peer : status(name).path("peers")) {
          if (!peer.path("link").path("up").asBoolean()) {
            down = name + " -> " + peer.path("name").asText();
          }
        }
      }
      if (down == null) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new BenchmarkException("the replication link " + down + " did not come up within "
            + LINKS_TIMEOUT.toSeconds() + " s; its log ends with:\n"
            + processes.get(down.substring(0, down.indexOf(' '))).logTail());
      }
      Thread.sleep(50);
    }
  }

  /**
   * Waits until every DC but {@code origin} has applied everything {@code origin} committed
   * before this call: a marker is written at the origin, and each other DC must show it and have
   * no remote transaction pending or being applied (the marker came last from its origin, but
   * earlier single-entity transactions may be applied concurrently with it). Returns the seconds
   * it took.
   */
  double awaitApplied(String origin, Duration timeout) throws Exception {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    String marker = Long.toString(System.nanoTime());
    String path = "/v1/entities/BenchDrain/marker/keys/n";
    try (HttpConnection connection = processes.get(origin).connect()) {
      HttpConnection.Response written = connection.put(path,
          marker.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      if (written.status() != 200) {
        throw new BenchmarkException("writing the drain marker at " + origin + " answered "
            + written.status() + ": " + written.text());
      }
    }
    for (String name : processes.keySet()) {
      if (name.equals(origin)) {
        continue;
      }
      try (HttpConnection connection = processes.get(name).connect()) {
        while (true) {
          HttpConnection.Response read = connection.get(path);
          if (read.status() == 200 && Json.parse(read.body()).path("value").asText()
              .equals(marker)) {
            JsonNode status = status(name);
            if (status.path("pendingRemoteTransactions").asLong() == 0
                && status.path("applyingTransactions").asLong() == 0) {
              break;
            }
          }
          if (System.nanoTime() > deadline) {
            throw new BenchmarkException(name + " did not apply " + origin + "'s transactions"
                + " within " + timeout.toSeconds() + " s: " + status(name));
          }
          Thread.sleep(20);
        }
      }
    }
    return (System.nanoTime() - start) / 1e9;
  }

  @Override
  public void close() {
    // Stopped in parallel: each takes a clean shutdown's time.
    List<Thread> stopping = new ArrayList<>();
    for (TroupeProcess process : processes.values()) {
      stopping.add(Thread.ofPlatform().start(process::close));
    }
    for (Thread thread : stopping) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    proxies.forEach(LoopbackProxy::close);
  }
}
