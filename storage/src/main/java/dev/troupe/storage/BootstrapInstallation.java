package dev.troupe.storage;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.BootstrapImage;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.Frames;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.Value;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Installs a bootstrap image into an empty store (docs/ARCHITECTURE.md, "Bootstrapping a new data
 * centre"): the storage side of a DC added to a running set. The store owns RocksDB, so the
 * installation writes through here: {@link #begin}, {@link #install} (bounded batches of entity
 * states written as checkpoints), {@link #complete} (the start vector as the received and applied
 * vectors, in the same synced write as the record that the image is installed), and later {@link
 * #finish} (once the applied vector covers the image's end vector).
 *
 * <p><b>Progress in meta</b> ({@code 'B'}, a framed {@link Progress}): absent on a store that was
 * never bootstrapped or finished its bootstrap; {@code STARTED} from {@link #begin} until {@link
 * #complete}; {@code INSTALLED} (with the source and the end vector) until {@link #finish}.
 *
 * <p><b>Crash.</b> {@link #begin} is synced before any state is written; {@link #install}'s writes
 * are not synced, and {@link #complete} syncs them with itself (the disk keeps a prefix of the
 * written batches that includes every synced one). A crash before {@link #complete} leaves {@code
 * STARTED}: the next {@link #begin} from the same source deletes every installed state and starts
 * over (a partial image is never served, and an image is not resumed: the source's entity order is
 * not a cut). A crash after it leaves {@code INSTALLED}: the image is whole.
 *
 * <p><b>Versions here.</b> An installed state's version is a timestamp of this store's own clock,
 * ticked after observing every version of the batch at the source (so every later commit here is
 * above it, also after a restart: a tick raises the durable clock ceiling); its version at the
 * source goes into the state's {@code $installed:<source>} marker ({@link ReplicaApplication}).
 *
 * <p>Only while nothing else writes the store (before the node serves): it keeps no cache coherent.
 */
public final class BootstrapInstallation {
  /** Where a bootstrap stands, as recorded in meta. */
  public enum Phase {
    /** Never bootstrapped, or finished. */
    NONE,
    /** An image is being installed; a restart must start it over. */
    STARTED,
    /** The image is installed; clients wait until the applied vector covers its end vector. */
    INSTALLED
  }

  /** The recorded progress; {@code sourceDc} and {@code endVector} are unset (0, empty) for NONE. */
  public record Progress(Phase phase, int sourceDc, DependencyVector endVector) {
    public static final Progress NONE = new Progress(Phase.NONE, 0, DependencyVector.EMPTY);
  }

  private static final byte[] META_BOOTSTRAP = Keys.META_BOOTSTRAP;
  /** Frame type and version of a {@link Progress} record in meta (own to this class). */
  private static final byte PROGRESS_TYPE = 1;
  private static final byte PROGRESS_VERSION = 1;
  /** An upper bound of every checkpoint key: entity ids are UTF-8, which never holds 0xFF. */
  private static final byte[] ABOVE_EVERY_ENTITY = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF};

  private final RocksStore store;

  BootstrapInstallation(RocksStore store) {
    this.store = store;
  }

  /** The recorded progress. */
  public Progress progress() {
    try {
      byte[] bytes = store.disk.get(KeyValueDisk.Column.META, META_BOOTSTRAP);
      return bytes == null ? Progress.NONE : decode(bytes);
    } catch (DiskException e) {
      throw RocksStore.unavailable(e);
    }
  }

  /**
   * Whether the store holds any entity, journal record or replication log entry (an installed
   * image's checkpoints included).
   */
  public boolean holdsData() {
    for (KeyValueDisk.Column column : List.of(KeyValueDisk.Column.JOURNAL,
        KeyValueDisk.Column.INDEX, KeyValueDisk.Column.CHECKPOINTS,
        KeyValueDisk.Column.REPLICATION)) {
      try (KeyValueDisk.Cursor cursor = store.disk.cursor(column)) {
        cursor.seekToFirst();
        if (cursor.isValid()) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Starts installing an image of {@code sourceDc}: on a store that holds no data, or one whose
   * bootstrap from the same source was started and not completed (its installed states are deleted
   * first). Synced. Anything else is refused ({@code invalid_request}) and changes nothing.
   */
  public void begin(int sourceDc) {
    Progress progress = progress();
    boolean restart = progress.phase() == Phase.STARTED && progress.sourceDc() == sourceDc;
    if (!restart && (progress.phase() != Phase.NONE || holdsData())) {
      throw TroupeException.invalid(progress.phase() == Phase.NONE
          ? "the store holds data: a data centre bootstraps only into an empty store"
          : "the store holds a bootstrap from data centre " + progress.sourceDc() + " ("
              + progress.phase() + "), not one to start over from " + sourceDc);
    }
    write(true, batch -> {
      if (restart) {
        // Only installed states were written since begin (the node did not serve).
        batch.deleteRange(KeyValueDisk.Column.CHECKPOINTS, new byte[] {0}, ABOVE_EVERY_ENTITY);
        // Their listing keys too: nothing else was written since begin.
        batch.deleteRange(KeyValueDisk.Column.LISTING, new byte[] {0}, ABOVE_EVERY_ENTITY);
      }
      batch.put(KeyValueDisk.Column.META, META_BOOTSTRAP,
          encode(new Progress(Phase.STARTED, sourceDc, DependencyVector.EMPTY)));
    });
  }

  /**
   * Writes entity states of the image as checkpoints, in one write (not synced: {@link #complete}
   * syncs). Each state gets the {@code $installed:<sourceDc>} marker at its version at the source
   * and, as its version here, one fresh tick of this store's clock taken after observing every
   * version of the batch.
   *
   * @return the version the states were installed at
   */
  public long install(int sourceDc, List<BootstrapImage.EntityImage> images) {
    requirePhase(Phase.STARTED, sourceDc);
    long highest = 0;
    for (BootstrapImage.EntityImage image : images) {
      highest = Math.max(highest, Math.max(image.versionAtSource(), image.state().version()));
    }
    store.clock.advancePast(highest);
    long version = store.tick();
    String marker = ReplicaApplication.installedKey(sourceDc);
    write(false, batch -> {
      for (BootstrapImage.EntityImage image : images) {
        Map<String, Value> values = new LinkedHashMap<>(image.state().values());
        // Stamped at the source's version and id, like the writes it stands for.
        values.put(marker, new RegisterValue(LongNode.valueOf(image.versionAtSource()),
            image.versionAtSource(), sourceDc));
        EntityState installed = new EntityState(values, version, image.state().exists());
        batch.put(KeyValueDisk.Column.CHECKPOINTS,
            Keys.checkpoint(Keys.entityPrefix(image.entity()), version),
            Codec.encodeState(installed));
        ListingIndex.put(batch, image.entity());
      }
    });
    return version;
  }

  /**
   * Completes the installation: the received and applied vectors become {@code startVector}
   * (without this DC's own entry) and the progress {@code INSTALLED} with {@code endVector}, in one
   * synced write that also makes every installed state durable. Reopen the store to serve it (the
   * replication log reads its vectors at open).
   */
  public void complete(int sourceDc, DependencyVector startVector, DependencyVector endVector) {
    requirePhase(Phase.STARTED, sourceDc);
    int self = store.settings.dataCentreId();
    write(true, batch -> {
      for (Map.Entry<Integer, Long> entry : startVector.entries().entrySet()) {
        if (entry.getKey() == self) {
          continue;
        }
        byte[] position = Codec.encodePosition(
            new JournalPosition(entry.getKey(), entry.getValue()));
        batch.put(KeyValueDisk.Column.META,
            Keys.metaVectorEntry(Keys.META_RECEIVED, entry.getKey()), position);
        batch.put(KeyValueDisk.Column.META,
            Keys.metaVectorEntry(Keys.META_APPLIED, entry.getKey()), position);
      }
      batch.put(KeyValueDisk.Column.META, META_BOOTSTRAP,
          encode(new Progress(Phase.INSTALLED, sourceDc, endVector)));
    });
  }

  /** Records that the bootstrap is over (the applied vector covered the end vector). Synced. */
  public void finish() {
    Invariants.check(progress().phase() == Phase.INSTALLED,
        "a bootstrap finishes only once installed, found %s", progress());
    write(true, batch -> batch.delete(KeyValueDisk.Column.META, META_BOOTSTRAP));
  }

  private void requirePhase(Phase phase, int sourceDc) {
    Progress progress = progress();
    Invariants.check(progress.phase() == phase && progress.sourceDc() == sourceDc,
        "bootstrap from %s expected in phase %s, found %s", sourceDc, phase, progress);
  }

  @FunctionalInterface
  private interface BatchWriter {
    void fill(KeyValueDisk.Batch batch) throws DiskException;
  }

  private void write(boolean sync, BatchWriter writer) {
    store.enterOpen();
    try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
      writer.fill(batch);
      store.disk.write(batch, sync);
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE, "bootstrap write failed: " + e.getMessage());
    } finally {
      store.exitOpen();
    }
  }

  static byte[] encode(Progress progress) {
    BinaryWriter out = Frames.begin(PROGRESS_TYPE, PROGRESS_VERSION, 32);
    out.type((byte) progress.phase().ordinal());
    out.varInt(progress.sourceDc());
    ReplicationCodec.writeDependencies(out, progress.endVector());
    return Frames.seal(out);
  }

  static Progress decode(byte[] bytes) {
    Frames.check(bytes, new byte[] {0, PROGRESS_VERSION},
        "bootstrap progress", (damage, message) -> new CorruptDataException(message));
    BinaryReader in = new BinaryReader(bytes, Frames.HEADER_BYTES,
        Frames.fieldsEnd(bytes),
        (position, message, cause) -> new CorruptDataException(
            "bootstrap progress at byte " + position + ": " + message, cause));
    int phase = in.type();
    Phase[] phases = Phase.values();
    if (phase < 0 || phase >= phases.length) {
      throw new CorruptDataException("bootstrap progress: unknown phase " + phase);
    }
    Progress progress = new Progress(phases[phase], in.varInt(),
        ReplicationCodec.readDependencies(in));
    in.end();
    return progress;
  }
}
