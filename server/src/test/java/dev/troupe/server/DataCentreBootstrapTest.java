package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data centre added to a running set (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"),
 * as real server processes ({@link DataCentreCluster}): a and b run with writers (counters, sets,
 * two-entity transactions); c starts later with {@code --bootstrap-from a} while the writers go
 * on, and a and b learn of it with {@code troupe peer add} once it listens. Its first start cannot
 * reach a (the link is cut) and is killed with SIGKILL in the middle of its bootstrap (started, not
 * installed); started without the flag, the cut store refuses to serve (exit 78); the restart with
 * it starts the image over, installs it, applies the logs' tails and serves. Afterwards every DC's
 * state is identical, every counter counts each acknowledged increment exactly once, and no
 * acknowledged addition is missing. A store with data refuses {@code --bootstrap-from} (exit 78).
 */
class DataCentreBootstrapTest {
  private static final List<String> NAMES = List.of("a", "b", "c");
  private static final String SECRET = "bootstrap-test-secret-0123456789";
  private static final String[] SETTINGS = {
      "troupe.replication.forward-after-millis=500",
      "troupe.replication.pull-interval-millis=50",
      "troupe.replication.pull-backoff-initial-millis=50",
      "troupe.replication.pull-backoff-max-millis=500",
      "troupe.replication.pull-timeout-millis=5000",
      "troupe.storage.partitions=2"};
  private static final int COUNTERS = 3;
  private static final int SETS = 3;
  private static final int REGISTERS = 200;
  private static final long CONVERGENCE_MILLIS = 60_000;

  @TempDir Path data;

  private DataCentreCluster cluster;
  private final Map<String, AtomicLong> acknowledged = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> attempted = new ConcurrentHashMap<>();
  private final Map<String, Set<String>> adds = new ConcurrentHashMap<>();
  private final Map<String, String> refusals = new ConcurrentHashMap<>();

  @Test
  void aDataCentreAddedToARunningSetConvergesAlsoAfterACrashDuringItsBootstrap()
      throws Exception {
    cluster = DataCentreCluster.builder(data).dataCentres(NAMES.toArray(String[]::new))
        .deferred("c").arguments("c", "--bootstrap-from", "a")
        .secret(SECRET).settings(SETTINGS).requestTimeout(Duration.ofSeconds(20)).start();
    AtomicBoolean writing = new AtomicBoolean(true);
    List<Thread> writers = new ArrayList<>();
    try {
      for (String name : List.of("a", "b")) {
        for (String[] type : new String[][] {
            {"Ctr", "{\"keys\": {\"n\": {\"kind\": \"counter\"}}}"},
            {"Bag", "{\"keys\": {\"items\": {\"kind\": \"set\"}}}"},
            {"Reg", "{\"keys\": {\"v\": {\"kind\": \"register\"}}}"}}) {
          ServerProcess.Answer declared =
              cluster.send(name, "PUT", "/v1/types/" + type[0], type[1]);
          assertEquals(200, declared.status(), declared.text());
        }
      }
      for (int i = 0; i < REGISTERS; i++) {
        ServerProcess.Answer written = cluster.send(i % 2 == 0 ? "a" : "b", "PUT",
            "/v1/entities/Reg/r" + i + "/keys/v", "\"" + i + "\"");
        assertEquals(200, written.status(), written.text());
      }
      Random random = new Random(42);
      for (String name : List.of("a", "b")) {
        long seed = random.nextLong();
        writers.add(Thread.ofPlatform().name("writer-" + name)
            .start(() -> write(name, new Random(seed), writing)));
      }
      Thread.sleep(1_500);

      // c's first start: a is unreachable, so its bootstrap is started and waits; SIGKILL.
      cluster.proxy("c", "a").partition();
      Thread starting = Thread.ofPlatform().name("start-c").start(() -> {
        try {
          cluster.startDeferred("c");
        } catch (Exception killed) {
          // Killed before it listened, as intended.
        }
      });
      Path cData = cluster.dataDirectory("c");
      long deadline = System.currentTimeMillis() + 60_000;
      while (!Files.exists(cData.resolve("CURRENT"))) {
        assertTrue(System.currentTimeMillis() < deadline, "c never opened its store");
        Thread.sleep(100);
      }
      Thread.sleep(2_000); // begun, and retrying the unreachable source
      // The one server process started that is neither a's nor b's (command lines are cut).
      Set<Long> running = Set.of(cluster.server("a").pid(), cluster.server("b").pid());
      List<ProcessHandle> c = ProcessHandle.current().children()
          .filter(process -> !running.contains(process.pid())
              && process.info().command().orElse("").endsWith("java"))
          .toList();
      if (c.size() != 1) {
        ProcessHandle.current().descendants().forEach(process -> System.out.println(
            "DataCentreBootstrapTest: child " + process.pid() + " "
                + process.info().commandLine().orElse("?").replaceAll("-cp \\S+", "-cp ...")));
        starting.join();
        cluster.printLogs(8000);
      }
      assertEquals(1, c.size(), "c's process: " + c);
      c.get(0).destroyForcibly();
      starting.join();
      // Cut mid-bootstrap: without the flag the half-filled store refuses to serve.
      ServerProcess.Finished unflagged = ServerProcess.run(List.of("serve", "--data",
          cData.toString(), "--port", "0", "--dc", "c", "--peer", "a=http://127.0.0.1:1",
          "--replication-secret-file", data.resolve("replication-secret").toString(),
          "--set", "troupe.storage.partitions=2"));
      assertEquals(78, unflagged.exitStatus(), unflagged.output());
      assertTrue(unflagged.output().contains("cut before its image"), unflagged.output());
      cluster.proxy("c", "a").heal();

      // The restart starts the image over and listens, keeping clients out until it has the
      // tails; the running DCs learn of c at runtime (troupe peer add), as an operator adds it.
      cluster.startDeferred("c");
      for (String peer : List.of("a", "b")) {
        ServerProcess.Finished added = ServerProcess.run(List.of("peer", "add",
            "c=" + cluster.proxy(peer, "c").url(), "--url", cluster.server(peer).baseUrl()));
        assertEquals(0, added.exitStatus(), added.output());
      }
      System.out.println("DataCentreBootstrapTest: c serves; its health: "
          + cluster.send("c", "GET", "/v1/health", null).text());
      long seed = random.nextLong();
      writers.add(Thread.ofPlatform().name("writer-c")
          .start(() -> write("c", new Random(seed), writing)));
      Thread.sleep(3_000);
    } finally {
      writing.set(false);
      for (Thread writer : writers) {
        writer.join();
      }
    }
    try {
      awaitConvergence();
      System.out.println("DataCentreBootstrapTest: refusals " + refusals + ", increments "
          + acknowledged);
      // Once bootstrapped, c's store holds data: the flag is refused (exit 78), nothing opened.
      cluster.kill("c");
      ServerProcess.Finished refused = ServerProcess.run(List.of("serve", "--data",
          cluster.dataDirectory("c").toString(), "--port", "0", "--dc", "c", "--peer",
          "a=http://127.0.0.1:1", "--replication-secret-file",
          data.resolve("replication-secret").toString(), "--set", "troupe.storage.partitions=2",
          "--bootstrap-from", "a"));
      assertEquals(78, refused.exitStatus(), refused.output());
      assertTrue(refused.output().contains("already holds data"), refused.output());
    } catch (Throwable failure) {
      System.out.println("DataCentreBootstrapTest: refusals " + refusals);
      cluster.printLogs(8000);
      throw failure;
    } finally {
      cluster.close();
    }
  }

  private void write(String dc, Random random, AtomicBoolean writing) {
    long sequence = 0;
    while (writing.get()) {
      sequence++;
      String unique = dc + "-" + sequence;
      try {
        int index = random.nextInt(COUNTERS);
        String counter = "/v1/entities/Ctr/c" + index;
        String set = "/v1/entities/Bag/s" + random.nextInt(SETS);
        switch (random.nextInt(3)) {
          case 0 -> {
            attempted.computeIfAbsent(counter, key -> new AtomicLong()).incrementAndGet();
            ServerProcess.Answer answer =
                cluster.send(dc, "POST", counter + "/keys/n/increment", "{\"by\": 1}");
            if (answer.status() == 200) {
              acknowledged.computeIfAbsent(counter, key -> new AtomicLong()).incrementAndGet();
            } else {
              refusals.put("increment " + answer.status(), answer.text());
            }
          }
          case 1 -> {
            ServerProcess.Answer answer = cluster.send(dc, "POST", set + "/keys/items/add",
                "{\"element\": \"" + unique + "\"}");
            if (answer.status() == 200) {
              adds.computeIfAbsent(set, key -> ConcurrentHashMap.newKeySet()).add(unique);
            } else {
              refusals.put("add " + answer.status(), answer.text());
            }
          }
          default -> {
            String pairedSet = "/v1/entities/Bag/s" + index;
            attempted.computeIfAbsent(counter, key -> new AtomicLong()).incrementAndGet();
            ServerProcess.Answer answer = cluster.send(dc, "POST", "/v1/transactions", """
                {"ops": [{"entity": "Ctr/c%d", "op": "increment", "key": "n", "by": 1},
                         {"entity": "Bag/s%d", "op": "add", "key": "items", "element": "%s"}]}"""
                .formatted(index, index, unique));
            if (answer.status() == 200) {
              acknowledged.computeIfAbsent(counter, key -> new AtomicLong()).incrementAndGet();
              adds.computeIfAbsent(pairedSet, key -> ConcurrentHashMap.newKeySet()).add(unique);
            } else {
              refusals.put("transaction " + answer.status(), answer.text());
            }
          }
        }
      } catch (Exception unreachable) {
        DataCentreCluster.pause(50);
      }
    }
  }

  private void awaitConvergence() throws Exception {
    List<String> entities = new ArrayList<>();
    for (int i = 0; i < COUNTERS; i++) {
      entities.add("/v1/entities/Ctr/c" + i);
    }
    for (int i = 0; i < SETS; i++) {
      entities.add("/v1/entities/Bag/s" + i);
    }
    for (int i = 0; i < REGISTERS; i += 17) {
      entities.add("/v1/entities/Reg/r" + i);
    }
    long deadline = System.currentTimeMillis() + CONVERGENCE_MILLIS;
    String problem;
    while ((problem = divergence(entities)) != null) {
      if (System.currentTimeMillis() > deadline) {
        fail("not converged in " + CONVERGENCE_MILLIS + " ms: " + problem);
      }
      Thread.sleep(250);
    }
  }

  /** Null once every DC holds the same visible state and the counts hold; else what differs. */
  private String divergence(List<String> entities) throws Exception {
    for (String entity : entities) {
      JsonNode first = null;
      for (String dc : NAMES) {
        ServerProcess.Answer answer = cluster.send(dc, "GET", entity, null);
        if (answer.status() != 200) {
          return dc + " " + entity + ": " + answer.status() + " " + answer.text();
        }
        JsonNode state = DataCentreCluster.visibleState(answer.body().get("state"));
        if (first == null) {
          first = state;
        } else if (!first.equals(state)) {
          return entity + ": a has " + first + ", " + dc + " has " + state;
        }
      }
      if (entity.contains("/Ctr/")) {
        long value = first.path("n").asLong();
        long low = acknowledged.getOrDefault(entity, new AtomicLong()).get();
        long high = attempted.getOrDefault(entity, new AtomicLong()).get();
        if (value < low || value > high) {
          return entity + ": " + value + " outside [" + low + ", " + high + "]";
        }
      }
      if (entity.contains("/Bag/")) {
        Set<String> elements = new HashSet<>();
        first.path("items").forEach(element -> elements.add(element.asText()));
        Set<String> missing = new HashSet<>(adds.getOrDefault(entity, Set.of()));
        missing.removeAll(elements);
        if (!missing.isEmpty()) {
          return entity + ": acknowledged adds missing: " + missing;
        }
      }
    }
    return null;
  }
}
