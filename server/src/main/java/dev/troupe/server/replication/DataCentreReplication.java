package dev.troupe.server.replication;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.replication.BootstrapGate;
import dev.troupe.runtime.replication.BootstrapSettings;
import dev.troupe.runtime.replication.ReplicationSettings;
import dev.troupe.runtime.replication.ReplicationShell;
import dev.troupe.storage.ReplicationLog;
import dev.troupe.storage.ReplicationPeer;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A named DC's replication as the server runs it: the runtime's {@link ReplicationShell} (the
 * causal rules, the log, applying remote transactions) and one {@link ReplicationPuller} per peer
 * (the HTTP side). The REST API serves peers' pulls and causal tokens from {@link #shell}.
 *
 * <p><b>Peers change at runtime</b> (docs/ARCHITECTURE.md, "Adding and removing data centres"):
 * {@link #addPeer} and {@link #removePeer} ({@code POST} and {@code DELETE
 * /v1/replication/peers}) check the change as {@code --peer} is checked, record the peers that
 * differ from the configuration in the store ({@link ReplicationLog#recordPeers}, synced) before
 * anything else changes, then tell the shell ({@link ReplicationShell#peersChanged}: pull planning
 * and the stable vector follow) and start or stop the peer's puller. At start the configured
 * peers are merged with the recorded ones: the configuration wins for a name in both (its URL),
 * and a configured peer removed at runtime comes back at a restart unless it is removed from the
 * configuration too (the record holds additions and URL changes, not removals of configured
 * peers). Changes run one at a time on their own thread (the record's synced write never runs on
 * a request's thread); {@link #settings} is the current peers' settings, swapped whole after each
 * change, so a pull from a newly added peer is served as soon as the change is answered.
 *
 * <p>Lifecycle: {@link #start} after the engine opened (the shell re-feeds what was received and
 * not applied before a restart); {@link #close} before the engine closes: pullers first, then the
 * shell.
 */
public final class DataCentreReplication implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DataCentreReplication.class);

  /** What {@link #addPeer} did. */
  public enum PeerChange {
    /** A new peer. */
    ADDED,
    /** A known peer with a new URL (its puller restarted at that URL). */
    UPDATED,
    /** The same name and URL again: nothing changed. */
    UNCHANGED
  }

  private final Troupe troupe;
  /** The settings as configured (the peers at start of configuration, not the record's). */
  private final ReplicationServerSettings configured;
  private final ReplicationSettings engineSettings;
  private final ReplicationShell shell;
  private final ReplicationLog replicationLog;
  /** The current peers' settings; swapped whole by a change (on {@link #changes}). */
  private volatile ReplicationServerSettings settings;
  /** Pullers by peer name, in the peers' order; replaced whole by a change. */
  private volatile Map<String, ReplicationPuller> pullers;
  private final ExecutorService changes = Executors.newSingleThreadExecutor(runnable -> {
    Thread thread = new Thread(runnable, "troupe-replication-peer-changes");
    thread.setDaemon(true);
    return thread;
  });
  private volatile boolean closed;
  private final BootstrapSettings bootstrapSettings;
  /** Created before the pullers start: a bootstrapped DC keeps clients out until its tails. */
  private final BootstrapGate bootstrapGate;
  /**
   * Where held long polls and idle replication streams re-read the log every {@code
   * long-poll-check-interval-millis}: a thread of its own, because Pekko's scheduler fires at its
   * tick (10 ms by default), which would make a 2 ms re-read a 10 ms one and add its wait to
   * every commit's way to the peers. The re-reads are short (an empty RocksDB range, mostly).
   */
  private final ScheduledExecutorService logChecks = Executors.newSingleThreadScheduledExecutor(
      runnable -> {
        Thread thread = new Thread(runnable, "troupe-replication-log-checks");
        thread.setDaemon(true);
        return thread;
      });

  private DataCentreReplication(Troupe troupe, ReplicationServerSettings configured,
      ReplicationServerSettings settings, ReplicationSettings engineSettings,
      ReplicationShell shell) {
    this.troupe = troupe;
    this.bootstrapSettings =
        BootstrapSettings.fromConfig(troupe.settings().config().getConfig("troupe"));
    this.bootstrapGate = BootstrapGate.start(troupe.store(), shell);
    this.configured = configured;
    this.settings = settings;
    this.engineSettings = engineSettings;
    this.shell = shell;
    this.replicationLog = troupe.store().replicationLog();
    Map<String, ReplicationPuller> started = new LinkedHashMap<>();
    for (ReplicationServerSettings.Peer peer : settings.peers()) {
      started.put(peer.name(), newPuller(peer, settings));
    }
    this.pullers = started;
    started.values().forEach(ReplicationPuller::start);
  }

  /**
   * Starts the shell for {@code troupe}'s DC and a puller per peer: the configured ones and those
   * added at runtime before a restart (recorded in the store).
   *
   * @throws IllegalArgumentException when the engine's DC settings ({@code troupe.dc}) and the
   *     server's disagree (both are parsed from one configuration, so only a caller mixing two can
   *     cause it)
   */
  public static DataCentreReplication start(Troupe troupe, ReplicationServerSettings settings) {
    ReplicationSettings engine = troupe.settings().replication();
    List<String> peerNames = settings.peers().stream().map(ReplicationServerSettings.Peer::name)
        .toList();
    if (!settings.named() || !engine.dataCentreName().equals(settings.dataCentreName())
        || !engine.peerNames().equals(peerNames)) {
      throw new IllegalArgumentException("the engine's data centre " + engine.dataCentreName()
          + " with peers " + engine.peerNames() + " is not the server's "
          + settings.dataCentreName() + " with peers " + peerNames);
    }
    ReplicationServerSettings merged =
        merged(settings, troupe.store().replicationLog().peers());
    List<String> mergedNames = merged.peers().stream().map(ReplicationServerSettings.Peer::name)
        .toList();
    ReplicationSettings running = engine.withDataCentre(engine.dataCentreName(), mergedNames);
    ReplicationShell shell = ReplicationShell.start(troupe, running);
    return new DataCentreReplication(troupe, settings, merged, running, shell);
  }

  /**
   * The configured peers, then each recorded one whose name is not configured (the configuration
   * wins for a name in both); a recorded peer that no longer fits (its id now a configured
   * peer's, or the configuration now lacks a secret) is left out with a warning.
   */
  static ReplicationServerSettings merged(ReplicationServerSettings configured,
      List<ReplicationPeer> recorded) {
    List<ReplicationServerSettings.Peer> peers = new ArrayList<>(configured.peers());
    for (ReplicationPeer peer : recorded) {
      if (configured.peerNamed(peer.name()).isPresent()) {
        continue;
      }
      try {
        peers.add(checked(configured.withPeers(peers), peer.name(), peer.url()));
      } catch (TroupeException | IllegalArgumentException unfit) {
        log.warn("replication: the peer {} at {} added at runtime is left out: {}", peer.name(),
            peer.url(), unfit.getMessage());
      }
    }
    return configured.withPeers(peers);
  }

  public ReplicationShell shell() {
    return shell;
  }

  /** Whether client requests wait for a bootstrap's tails ({@code 503 bootstrapping}). */
  public BootstrapGate bootstrapGate() {
    return bootstrapGate;
  }

  /** The engine's store: a bootstrap image is read from it. */
  public dev.troupe.storage.Store troupeStore() {
    return troupe.store();
  }

  public BootstrapSettings bootstrapSettings() {
    return bootstrapSettings;
  }

  /** The server's replication settings with the current peers (configured and added). */
  public ReplicationServerSettings settings() {
    return settings;
  }

  /** The engine's replication settings: batch sizes, the token wait. */
  public ReplicationSettings engineSettings() {
    return engineSettings;
  }

  /** Where re-reads of the log for waiting peers are scheduled (see the field). */
  public ScheduledExecutorService logChecks() {
    return logChecks;
  }

  /** One puller per current peer, in the peers' order. */
  public List<ReplicationPuller> pullers() {
    return List.copyOf(pullers.values());
  }

  /** Whether {@code name} is a peer because the configuration names it (not added at runtime). */
  public boolean configured(String name) {
    return configured.peerNamed(name).isPresent();
  }

  /**
   * Adds the peer {@code name} at {@code url}, or changes a known peer's URL; the same name and
   * URL again changes nothing. Completes once the change is recorded and the puller runs; fails
   * with {@code invalid_request} (a malformed name or URL, this DC's own name) or {@code conflict}
   * (the name's id is another peer's, or the server has no replication secret) and changes
   * nothing then.
   */
  public CompletionStage<PeerChange> addPeer(String name, String url) {
    return onChangeThread(() -> {
      ReplicationServerSettings current = settings;
      Optional<ReplicationServerSettings.Peer> known = current.peerNamed(name);
      List<ReplicationServerSettings.Peer> others = new ArrayList<>(current.peers());
      known.ifPresent(others::remove);
      ReplicationServerSettings.Peer peer = checked(current.withPeers(others), name, url);
      if (known.isPresent() && known.get().url().equals(peer.url())) {
        return PeerChange.UNCHANGED;
      }
      List<ReplicationServerSettings.Peer> next = new ArrayList<>(current.peers());
      if (known.isPresent()) {
        next.set(next.indexOf(known.get()), peer);
      } else {
        next.add(peer);
      }
      apply(current.withPeers(next));
      log.info("replication: peer {} {} at {}", name, known.isPresent() ? "moved" : "added",
          peer.url());
      return known.isPresent() ? PeerChange.UPDATED : PeerChange.ADDED;
    });
  }

  /**
   * Removes the peer {@code name} (configured or added): no longer pulled, served or counted in
   * the stable vector. Completes once recorded and its puller stopped; fails with {@code
   * not_found} for a name that is not a peer.
   */
  public CompletionStage<Void> removePeer(String name) {
    return onChangeThread(() -> {
      ReplicationServerSettings current = settings;
      ReplicationServerSettings.Peer peer = current.peerNamed(name).orElseThrow(() ->
          new TroupeException(ErrorCode.NOT_FOUND, "'" + name + "' is not a peer of '"
              + current.dataCentreName() + "'"));
      List<ReplicationServerSettings.Peer> next = new ArrayList<>(current.peers());
      next.remove(peer);
      apply(current.withPeers(next));
      log.info("replication: peer {} removed{}", name, configured(name)
          ? " (it is configured: a restart with the same configuration adds it again)" : "");
      return null;
    });
  }

  /**
   * The peer {@code name} at {@code url} checked as {@code --peer} is against {@code others}
   * (every other peer) and this DC: a valid name, not this DC's, of an id no other peer has; a
   * {@code http(s)://host:port} URL; and a replication secret, unless unauthenticated pulls are
   * allowed.
   */
  static ReplicationServerSettings.Peer checked(ReplicationServerSettings others, String name,
      String url) {
    if (name == null || !DataCentreIds.isValidName(name)) {
      throw TroupeException.invalid("name: '" + name + "' is not a valid data centre name (1-63"
          + " letters, digits, '.', '_' or '-', starting with a letter or digit)");
    }
    if (name.equals(others.dataCentreName())) {
      throw TroupeException.invalid("name: '" + name + "' is this data centre's own name");
    }
    int id = DataCentreIds.of(name);
    if (id == others.dataCentreId()) {
      throw new TroupeException(ErrorCode.CONFLICT, "name: '" + name + "' has the id " + id
          + " of this data centre '" + others.dataCentreName() + "' (a CRC32C collision):"
          + " rename it");
    }
    Optional<ReplicationServerSettings.Peer> clash = others.peer(id);
    if (clash.isPresent()) {
      throw new TroupeException(ErrorCode.CONFLICT, "name: '" + name + "' has the id " + id
          + " of the peer '" + clash.get().name() + "' (a CRC32C collision): rename it");
    }
    URI uri;
    try {
      uri = ReplicationServerSettings.url(name, url == null ? "" : url.trim());
    } catch (IllegalArgumentException bad) {
      throw TroupeException.invalid("url: '" + url + "' is not the base URL of a REST server"
          + " (http://host:port or https://host:port, no path)");
    }
    if (others.secret().isEmpty() && !others.allowUnauthenticated()) {
      throw new TroupeException(ErrorCode.CONFLICT, "this server has no replication secret"
          + " (--replication-secret-file): it cannot pull from a peer");
    }
    return new ReplicationServerSettings.Peer(name, id, uri);
  }

  /** Records, tells the shell, then swaps the settings and the pullers (on the change thread). */
  private void apply(ReplicationServerSettings next) {
    List<ReplicationPeer> record = new ArrayList<>();
    for (ReplicationServerSettings.Peer peer : next.peers()) {
      boolean asConfigured = configured.peerNamed(peer.name())
          .filter(same -> same.url().equals(peer.url())).isPresent();
      if (!asConfigured) {
        record.add(new ReplicationPeer(peer.name(), peer.url().toString()));
      }
    }
    // Durable first: an answered change survives a crash.
    replicationLog.recordPeers(record).toCompletableFuture().join();
    settings = next;
    shell.peersChanged(next.peers().stream().map(ReplicationServerSettings.Peer::name).toList());
    Map<String, ReplicationPuller> previous = pullers;
    Map<String, ReplicationPuller> current = new LinkedHashMap<>();
    List<ReplicationPuller> started = new ArrayList<>();
    for (ReplicationServerSettings.Peer peer : next.peers()) {
      ReplicationPuller kept = previous.get(peer.name());
      if (kept != null && kept.peer().equals(peer)) {
        current.put(peer.name(), kept);
      } else {
        ReplicationPuller puller = newPuller(peer, next);
        current.put(peer.name(), puller);
        started.add(puller);
      }
    }
    pullers = current;
    previous.forEach((name, puller) -> {
      if (current.get(name) != puller) {
        puller.close();
      }
    });
    if (!closed) {
      started.forEach(ReplicationPuller::start);
    }
  }

  private ReplicationPuller newPuller(ReplicationServerSettings.Peer peer,
      ReplicationServerSettings with) {
    return new ReplicationPuller(troupe.actorSystem(), shell, peer, with,
        engineSettings.pullBatchMaxEntries());
  }

  /** A check that fails changes nothing; any other failure is the store's (unavailable). */
  private <T> CompletionStage<T> onChangeThread(java.util.function.Supplier<T> change) {
    try {
      return CompletableFuture.supplyAsync(() -> {
        if (closed) {
          throw new TroupeException(ErrorCode.UNAVAILABLE, "replication is closing");
        }
        return change.get();
      }, changes);
    } catch (RejectedExecutionException closing) {
      return CompletableFuture.failedFuture(
          new TroupeException(ErrorCode.UNAVAILABLE, "replication is closing"));
    }
  }

  @Override
  public void close() {
    closed = true;
    changes.shutdown();
    try {
      changes.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pullers.values().forEach(ReplicationPuller::close);
    // Streams and polls still waiting end with a failed read of a closed shell, or its client.
    logChecks.shutdownNow();
    shell.close();
  }
}
