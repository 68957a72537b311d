package dev.troupe.server.replication;

import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.replication.BootstrapInstaller;
import dev.troupe.runtime.replication.BootstrapSettings;
import dev.troupe.storage.BootstrapInstallation;
import dev.troupe.storage.RocksStore;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code serve --bootstrap-from NAME} before the engine opens (docs/ARCHITECTURE.md,
 * "Bootstrapping a new data centre"): reads the named peer's bootstrap image ({@code GET
 * /v1/replication/bootstrap} with the replication secret) and installs it ({@link
 * BootstrapInstaller}); a failed read is tried again after the pull backoff (each attempt starts
 * the image over), so a DC started before its source is reachable waits for it. Without the flag,
 * refuses a store whose bootstrap was started and not completed.
 *
 * <p>A blocking {@link HttpURLConnection} on the starting thread: nothing else runs yet, its read
 * timeout bounds a silent source ({@code troupe.replication.bootstrap.read-timeout-millis}), and
 * the chunked body is read a frame at a time.
 */
public final class BootstrapFetch {
  private static final Logger log = LoggerFactory.getLogger(BootstrapFetch.class);

  private BootstrapFetch() {}

  /**
   * Problems that stop the start (said in one line; the server exits 78), or empty when the node
   * may open: the image is installed (or was already), or no bootstrap is asked for or pending.
   */
  public static Optional<String> prepare(RuntimeSettings settings,
      ReplicationServerSettings replication, String sourceName) throws InterruptedException {
    BootstrapSettings bootstrap =
        BootstrapSettings.fromConfig(settings.config().getConfig("troupe"));
    if (sourceName == null) {
      // Only a named DC can have been bootstrapped; others open their store once, as before.
      return replication.named() ? unfinished(settings) : Optional.empty();
    }
    if (!replication.named()) {
      return Optional.of("--bootstrap-from needs --dc (a data centre name)");
    }
    Optional<ReplicationServerSettings.Peer> source = replication.peerNamed(sourceName);
    if (source.isEmpty()) {
      return Optional.of("--bootstrap-from " + sourceName + ": not a peer (--peer "
          + sourceName + "=URL)");
    }
    URI uri = source.get().url().resolve(ReplicationProtocol.BOOTSTRAP_PATH);
    long backoff = replication.pullBackoffInitialMillis();
    while (true) {
      try {
        BootstrapInstaller.Outcome outcome = BootstrapInstaller.prepare(settings.storage(),
            sourceName, () -> open(uri, replication, bootstrap), bootstrap);
        if (outcome.installed()) {
          System.out.printf("Bootstrapped from %s: %d entities; serving clients once the logs'"
              + " tails are applied%n", sourceName, outcome.entities());
        }
        return Optional.empty();
      } catch (BootstrapInstaller.Refused refused) {
        return Optional.of(refused.getMessage());
      } catch (RuntimeException local) {
        // Not the image: the store (locked by another process, unreadable). Retrying cannot help.
        return Optional.of("--bootstrap-from " + sourceName + ": " + local.getMessage());
      } catch (IOException failed) {
        log.warn("bootstrap from {} at {} failed ({}); trying again in {} ms", sourceName, uri,
            failed.toString(), backoff);
        Thread.sleep(backoff);
        backoff = Math.min(backoff * 2, replication.pullBackoffMaxMillis());
      }
    }
  }

  private static InputStream open(URI uri, ReplicationServerSettings replication,
      BootstrapSettings bootstrap) throws IOException {
    HttpURLConnection connection = (HttpURLConnection) uri.toURL().openConnection();
    int timeout = (int) Math.min(Integer.MAX_VALUE, bootstrap.readTimeoutMillis());
    connection.setConnectTimeout(timeout);
    connection.setReadTimeout(timeout);
    connection.setRequestProperty(ReplicationProtocol.DC_HEADER, replication.dataCentreName());
    replication.secret().ifPresent(secret ->
        connection.setRequestProperty("Authorization", "Bearer " + secret));
    int status = connection.getResponseCode();
    if (status != 200) {
      InputStream error = connection.getErrorStream();
      String body = error == null ? "" : new String(error.readNBytes(500),
          java.nio.charset.StandardCharsets.UTF_8);
      connection.disconnect();
      throw new IOException("GET " + uri + " answered " + status + " " + body);
    }
    return connection.getInputStream();
  }

  /**
   * A store whose bootstrap was started and never completed serves nothing on its own. A store
   * that cannot be opened here is left to the engine's open, which reports it as it always does
   * (damaged data: exit 65).
   */
  private static Optional<String> unfinished(RuntimeSettings settings) {
    if (!Files.isDirectory(settings.storage().directory())) {
      return Optional.empty();
    }
    BootstrapInstallation.Progress progress;
    try (RocksStore store = RocksStore.open(settings.storage(), System::currentTimeMillis)) {
      progress = store.bootstrapInstallation().progress();
    } catch (RuntimeException unopened) {
      return Optional.empty();
    }
    if (progress.phase() == BootstrapInstallation.Phase.STARTED) {
      return Optional.of("the data directory holds a bootstrap that was cut before its image"
          + " was installed (from data centre id " + progress.sourceDc() + "); start again"
          + " with the same --bootstrap-from to start it over");
    }
    return Optional.empty();
  }
}
