package dev.troupe.runtime.replication;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.replication.PullRequest;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * Several DCs in one JVM for tests: each a real {@link Troupe} on its own RocksDB directory with
 * its own {@link ReplicationShell}, connected by pulls run in the test's thread (what the server's
 * pullers do over HTTP: {@link ReplicationShell#pullsFrom} on the puller, {@link
 * ReplicationShell#serve} on the peer, {@link ReplicationShell#received} on the puller). A link
 * can be cut in both directions; a cut link's pulls fail ({@link ReplicationShell#linkFailed}).
 */
final class DataCentres implements AutoCloseable {
  /** One DC: its engine and shell, reopened on the same directory by {@link #restart}. */
  static final class Dc {
    final String name;
    final Path directory;
    final List<String> peers;
    Troupe troupe;
    ReplicationShell shell;
    RuntimeSettings settings;

    Dc(String name, Path directory, List<String> peers) {
      this.name = name;
      this.directory = directory;
      this.peers = peers;
    }

    int id() {
      return shell.dataCentreId();
    }
  }

  private final Map<String, Dc> dcs = new LinkedHashMap<>();
  private final Set<Set<String>> cut = new HashSet<>();
  private final Map<String, Object> overrides;

  /** DCs named {@code names}, every one a peer of every other, under {@code root}. */
  DataCentres(Path root, Map<String, Object> overrides, String... names) {
    this.overrides = overrides;
    for (String name : names) {
      List<String> peers = new ArrayList<>();
      for (String other : names) {
        if (!other.equals(name)) {
          peers.add(other);
        }
      }
      Dc dc = new Dc(name, root.resolve(name), List.copyOf(peers));
      dcs.put(name, dc);
      open(dc);
    }
  }

  private void open(Dc dc) {
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("troupe.data-directory", dc.directory.toString());
    config.put("troupe.dc.name", dc.name);
    config.put("troupe.dc.peers", dc.peers);
    // Small enough for tests to see forwarding and records within a second or two.
    config.put("troupe.replication.forward-after-millis", 300);
    config.put("troupe.replication.applied-record-interval-millis", 100);
    config.put("troupe.replication.truncate-interval-millis", 200);
    config.put("troupe.replication.tick-interval-millis", 20);
    config.put("troupe.replication.retry-delay-millis", 20);
    config.put("troupe.replication.pull-batch-max-entries", 50);
    config.putAll(overrides);
    RuntimeSettings settings = RuntimeSettings.fromConfig(ConfigFactory.parseMap(config)
        .withFallback(ConfigFactory.load()));
    dc.settings = settings;
    dc.troupe = Troupe.open(settings);
    dc.shell = ReplicationShell.start(dc.troupe, settings.replication());
  }

  Dc get(String name) {
    return dcs.get(name);
  }

  Troupe troupe(String name) {
    return dcs.get(name).troupe;
  }

  ReplicationShell shell(String name) {
    return dcs.get(name).shell;
  }

  void cut(String a, String b) {
    cut.add(Set.of(a, b));
  }

  void heal(String a, String b) {
    cut.remove(Set.of(a, b));
  }

  /** Closes a DC and opens it again on the same directory (a restart; nothing else kept). */
  void restart(String name) {
    Dc dc = dcs.get(name);
    dc.shell.close();
    dc.troupe.close();
    open(dc);
  }

  /**
   * Closes a DC, runs {@code whileClosed} (on its directory: a bootstrap's installation), and opens
   * it again.
   */
  void restart(String name, java.util.function.Consumer<Dc> whileClosed) {
    Dc dc = dcs.get(name);
    dc.shell.close();
    dc.troupe.close();
    whileClosed.accept(dc);
    open(dc);
  }

  /**
   * One round of every pull {@code puller} plans from {@code peer}; a cut link fails them. Returns
   * how many entries arrived.
   */
  int pull(String puller, String peer) {
    Dc to = dcs.get(puller);
    Dc from = dcs.get(peer);
    if (cut.contains(Set.of(puller, peer))) {
      to.shell.linkFailed(from.id());
      return 0;
    }
    int entries = 0;
    for (PullRequest pull : to.shell.pullsFrom(from.id(),
        System.currentTimeMillis())) {
      ReplicationBatch batch = from.shell.serve(to.id(), to.shell.receivedVector(),
          pull.originDc(), pull.afterTimestamp(), 50);
      to.shell.received(from.id(), batch).join();
      entries += batch.entries().size();
    }
    return entries;
  }

  /**
   * One pull of {@code origin}'s entries by {@code puller} from {@code peer}, whatever the
   * puller's plan (to hold back what the plan would ask for too). Returns how many arrived.
   */
  int pullOrigin(String puller, String peer, String origin) {
    Dc to = dcs.get(puller);
    Dc from = dcs.get(peer);
    int originDc = dcs.get(origin).id();
    ReplicationBatch batch = from.shell.serve(to.id(), to.shell.receivedVector(), originDc,
        to.shell.receivedVector().get(originDc), 50);
    to.shell.received(from.id(), batch).join();
    return batch.entries().size();
  }

  /** One round of pulls over every link (both directions). */
  int pullAll() {
    int entries = 0;
    for (String puller : dcs.keySet()) {
      for (String peer : dcs.keySet()) {
        if (!puller.equals(peer)) {
          entries += pull(puller, peer);
        }
      }
    }
    return entries;
  }

  /** Pulls over every link until {@code done} holds; fails after {@code timeoutMillis}. */
  void pullUntil(BooleanSupplier done, long timeoutMillis, String what) {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        StringBuilder status = new StringBuilder();
        dcs.values().forEach(dc -> status.append("\n  ").append(dc.name).append(": ")
            .append(dc.shell.status()));
        throw new AssertionError("not reached in " + timeoutMillis + " ms: " + what + status);
      }
      pullAll();
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  @Override
  public void close() {
    for (Dc dc : dcs.values()) {
      try {
        dc.shell.close();
      } finally {
        dc.troupe.close();
      }
    }
  }
}
