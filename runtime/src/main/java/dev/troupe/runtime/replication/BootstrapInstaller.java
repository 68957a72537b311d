package dev.troupe.runtime.replication;

import dev.troupe.model.causal.BootstrapImage;
import dev.troupe.model.causal.BootstrapImageCodec;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.storage.BootstrapInstallation;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fills the store of a DC added to a running set from another DC's bootstrap image, before the
 * node opens (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"): {@code serve
 * --bootstrap-from NAME}. Reads the image one record at a time and installs its entity states in
 * bounded write batches through the storage layer ({@link BootstrapInstallation}); the start vector
 * becomes the received and applied vectors in the same synced write that records the image
 * installed, with its end vector. The node then opens as usual, its pullers pull every origin's log
 * after the start vector, and {@link BootstrapGate} keeps clients out until the applied vector
 * covers the end vector.
 *
 * <p><b>Decisions at start</b> ({@link #prepare}): a store whose image is installed from this
 * source needs nothing more (a restart while clients still wait); an empty store, or one whose
 * installation from this source started and did not complete (a crash mid-image), takes the image
 * from the start (the partial states are deleted first: an image is not resumed, since a new one
 * has another start vector); anything else is refused ({@link Refused}, the server exits 78).
 */
public final class BootstrapInstaller {
  private static final Logger log = LoggerFactory.getLogger(BootstrapInstaller.class);

  /** Opens the image's byte stream (an HTTP GET of the source's image route, or a test's bytes). */
  @FunctionalInterface
  public interface ImageSource {
    InputStream open() throws IOException;
  }

  /** The store cannot take an image from this source (it holds data, or another bootstrap). */
  public static final class Refused extends RuntimeException {
    public Refused(String message) {
      super(message);
    }
  }

  /** What {@link #prepare} did. */
  public record Outcome(boolean installed, long entities, BootstrapInstallation.Progress progress) {}

  private BootstrapInstaller() {}

  /**
   * Installs {@code sourceName}'s image into the store of {@code storage} unless it is installed
   * already; opens and closes the store itself (before the node opens it).
   *
   * @throws Refused the store holds data or another DC's bootstrap
   * @throws IOException the image could not be read whole, or was damaged (nothing is served from
   *     it; run again)
   */
  public static Outcome prepare(StorageSettings storage, String sourceName, ImageSource source,
      BootstrapSettings settings) throws IOException {
    int sourceDc = DataCentreIds.of(sourceName);
    try (RocksStore store = RocksStore.open(storage, System::currentTimeMillis)) {
      BootstrapInstallation installation = store.bootstrapInstallation();
      BootstrapInstallation.Progress progress = installation.progress();
      if (progress.phase() == BootstrapInstallation.Phase.INSTALLED
          && progress.sourceDc() == sourceDc) {
        log.info("bootstrap: the image of {} is installed; waiting for the logs' tails",
            sourceName);
        return new Outcome(false, 0, progress);
      }
      try {
        installation.begin(sourceDc);
      } catch (RuntimeException refused) {
        throw new Refused("--bootstrap-from " + sourceName + " refused: "
            + (progress.phase() == BootstrapInstallation.Phase.NONE
                ? "the store already holds data (a DC bootstraps only into an empty data"
                    + " directory; start it without --bootstrap-from to serve its own data)"
                : "the store holds an unfinished bootstrap from another data centre (id "
                    + progress.sourceDc() + ")"));
      }
      if (progress.phase() == BootstrapInstallation.Phase.STARTED) {
        log.warn("bootstrap: an image of {} was cut by a restart; starting it over", sourceName);
      }
      long entities = install(installation, sourceDc, source, settings);
      log.info("bootstrap: installed {} entities of {}", entities, sourceName);
      return new Outcome(true, entities, installation.progress());
    }
  }

  private static long install(BootstrapInstallation installation, int sourceDc,
      ImageSource source, BootstrapSettings settings) throws IOException {
    try {
      return read(installation, sourceDc, source, settings);
    } catch (CorruptFrameException damaged) {
      // Bytes damaged on the way (or a newer source's format): the image is read again.
      throw new IOException("damaged bootstrap image: " + damaged.getMessage(), damaged);
    }
  }

  private static long read(BootstrapInstallation installation, int sourceDc,
      ImageSource source, BootstrapSettings settings) throws IOException {
    try (CountingStream in = new CountingStream(source.open())) {
      BootstrapImage first = BootstrapImageCodec.read(in, settings.maxFrameBytes());
      if (!(first instanceof BootstrapImage.Began began) || began.sourceDc() != sourceDc) {
        throw new IOException("the bootstrap image does not begin with a start of data centre "
            + sourceDc + ": " + first);
      }
      List<BootstrapImage.EntityImage> batch = new ArrayList<>();
      long entities = 0;
      while (true) {
        BootstrapImage record = BootstrapImageCodec.read(in, settings.maxFrameBytes());
        switch (record) {
          case null -> throw new IOException("the bootstrap image ended without its end record"
              + " after " + entities + " entities");
          case BootstrapImage.EntityImage image -> {
            batch.add(image);
            entities++;
            if (batch.size() >= settings.readPageEntities()
                || in.count >= settings.installBatchBytes()) {
              installation.install(sourceDc, batch);
              batch.clear();
              in.count = 0;
            }
          }
          case BootstrapImage.Ended ended -> {
            if (ended.entityCount() != entities) {
              throw new IOException("the bootstrap image announced " + ended.entityCount()
                  + " entities and carried " + entities);
            }
            if (!batch.isEmpty()) {
              installation.install(sourceDc, batch);
            }
            installation.complete(sourceDc, began.startVector(), ended.endVector());
            return entities;
          }
          case BootstrapImage.Began again -> throw new IOException(
              "the bootstrap image began twice");
        }
      }
    }
  }

  /** Counts the bytes read since the last reset (the installed batch's size). */
  private static final class CountingStream extends FilterInputStream {
    long count;

    CountingStream(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      int read = super.read();
      if (read >= 0) {
        count++;
      }
      return read;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int read = super.read(buffer, offset, length);
      if (read > 0) {
        count += read;
      }
      return read;
    }
  }
}
