package dev.troupe.runtime.replication;

import dev.troupe.model.causal.DependencyVector;
import dev.troupe.storage.BootstrapInstallation;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps clients out of a DC whose bootstrap image is installed but whose logs' tails are not yet
 * applied (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"): until the applied vector
 * covers the image's end vector, an installed entity may show a later transaction of another
 * entity's state without this one's part of it (the image is no cut), so the server answers
 * client requests {@code 503 bootstrapping}; replication and health are served. Once covered, it
 * records the bootstrap finished (synced; a restart before that waits again, from the durable
 * vectors) and opens.
 */
public final class BootstrapGate {
  private static final Logger log = LoggerFactory.getLogger(BootstrapGate.class);
  /** How long one wait on the shell lasts before it is armed again (it has a bound). */
  private static final long WAIT_ROUND_MILLIS = 3_600_000;

  private final BootstrapInstallation installation;
  private final ReplicationShell shell;
  private final DependencyVector endVector;
  private volatile boolean open;

  private BootstrapGate(BootstrapInstallation installation, ReplicationShell shell,
      DependencyVector endVector, boolean open) {
    this.installation = installation;
    this.shell = shell;
    this.endVector = endVector;
    this.open = open;
  }

  /** The gate of the engine's store: open at once unless an installed image waits for its tail. */
  public static BootstrapGate start(Store store, ReplicationShell shell) {
    if (!(store instanceof RocksStore rocks)) {
      return new BootstrapGate(null, shell, DependencyVector.EMPTY, true);
    }
    BootstrapInstallation installation = rocks.bootstrapInstallation();
    BootstrapInstallation.Progress progress = installation.progress();
    if (progress.phase() != BootstrapInstallation.Phase.INSTALLED) {
      return new BootstrapGate(installation, shell, DependencyVector.EMPTY, true);
    }
    // Only the origins this DC replicates: an entry of a DC it does not know (one the source
    // still remembers, or not yet added here) would never be covered.
    java.util.Set<Integer> known = new java.util.HashSet<>();
    shell.peerNames().forEach(name ->
        known.add(dev.troupe.model.causal.DataCentreIds.of(name)));
    java.util.TreeMap<Integer, Long> waited = new java.util.TreeMap<>(
        progress.endVector().entries());
    waited.keySet().retainAll(known);
    DependencyVector endVector = new DependencyVector(waited);
    BootstrapGate gate = new BootstrapGate(installation, shell, endVector, false);
    log.info("bootstrap: clients wait until the applied vector covers {}", endVector);
    gate.await();
    return gate;
  }

  private void await() {
    shell.whenVisible(endVector, WAIT_ROUND_MILLIS).whenComplete((covered, failure) -> {
      if (failure == null && Boolean.TRUE.equals(covered)) {
        try {
          installation.finish();
        } catch (RuntimeException e) {
          // Not recorded: a restart waits for the same vector again, which is covered at once.
          log.warn("bootstrap: recording the end failed: {}", e.toString());
        }
        open = true;
        log.info("bootstrap: the logs' tails are applied; serving clients");
      } else if (failure == null && !shell.isClosed()) {
        await();
      }
    });
  }

  /** Whether clients are still kept out. */
  public boolean bootstrapping() {
    return !open;
  }

  /** The end vector the applied vector must cover (empty once open from the start). */
  public DependencyVector endVector() {
    return endVector;
  }
}
