package dev.troupe.server.replication;

import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.replication.ReplicationSettings;
import dev.troupe.runtime.replication.ReplicationShell;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A named DC's replication as the server runs it: the runtime's {@link ReplicationShell} (the
 * causal rules, the log, applying remote transactions) and one {@link ReplicationPuller} per peer
 * (the HTTP side). The REST API serves peers' pulls and causal tokens from {@link #shell}.
 *
 * <p>Lifecycle: {@link #start} after the engine opened (the shell re-feeds what was received and
 * not applied before a restart); {@link #close} before the engine closes: pullers first, then the
 * shell.
 */
public final class DataCentreReplication implements AutoCloseable {
  private final ReplicationServerSettings settings;
  private final ReplicationSettings engineSettings;
  private final ReplicationShell shell;
  private final List<ReplicationPuller> pullers;
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

  private DataCentreReplication(ReplicationServerSettings settings,
      ReplicationSettings engineSettings, ReplicationShell shell, List<ReplicationPuller> pullers) {
    this.settings = settings;
    this.engineSettings = engineSettings;
    this.shell = shell;
    this.pullers = List.copyOf(pullers);
  }

  /**
   * Starts the shell for {@code troupe}'s DC and a puller per peer.
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
    ReplicationShell shell = ReplicationShell.start(troupe, engine);
    List<ReplicationPuller> pullers = new ArrayList<>();
    for (ReplicationServerSettings.Peer peer : settings.peers()) {
      pullers.add(new ReplicationPuller(troupe.actorSystem(), shell, peer, settings,
          engine.pullBatchMaxEntries()));
    }
    pullers.forEach(ReplicationPuller::start);
    return new DataCentreReplication(settings, engine, shell, pullers);
  }

  public ReplicationShell shell() {
    return shell;
  }

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

  /** One puller per peer, in the configured order. */
  public List<ReplicationPuller> pullers() {
    return pullers;
  }

  @Override
  public void close() {
    pullers.forEach(ReplicationPuller::close);
    // Streams and polls still waiting end with a failed read of a closed shell, or its client.
    logChecks.shutdownNow();
    shell.close();
  }
}
