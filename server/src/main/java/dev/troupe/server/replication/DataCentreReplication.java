package dev.troupe.server.replication;

import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.replication.ReplicationSettings;
import dev.troupe.runtime.replication.BootstrapGate;
import dev.troupe.runtime.replication.BootstrapSettings;
import dev.troupe.runtime.replication.ReplicationShell;
import java.util.ArrayList;
import java.util.List;

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
  private final Troupe troupe;
  private final BootstrapSettings bootstrapSettings;
  private final BootstrapGate bootstrapGate;

  private DataCentreReplication(ReplicationServerSettings settings,
      ReplicationSettings engineSettings, ReplicationShell shell, List<ReplicationPuller> pullers,
      Troupe troupe, BootstrapSettings bootstrapSettings, BootstrapGate bootstrapGate) {
    this.troupe = troupe;
    this.bootstrapSettings = bootstrapSettings;
    this.bootstrapGate = bootstrapGate;
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
    // Before the pullers: a bootstrapped DC keeps clients out until the tails are applied.
    BootstrapGate gate = BootstrapGate.start(troupe.store(), shell);
    List<ReplicationPuller> pullers = new ArrayList<>();
    for (ReplicationServerSettings.Peer peer : settings.peers()) {
      pullers.add(new ReplicationPuller(troupe.actorSystem(), shell, peer, settings,
          engine.pullBatchMaxEntries()));
    }
    pullers.forEach(ReplicationPuller::start);
    return new DataCentreReplication(settings, engine, shell, pullers, troupe,
        BootstrapSettings.fromConfig(troupe.settings().config().getConfig("troupe")), gate);
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

  /** One puller per peer, in the configured order. */
  public List<ReplicationPuller> pullers() {
    return pullers;
  }

  @Override
  public void close() {
    pullers.forEach(ReplicationPuller::close);
    shell.close();
  }
}
