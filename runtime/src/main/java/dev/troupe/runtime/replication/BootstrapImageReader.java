package dev.troupe.runtime.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.causal.BootstrapImage;
import dev.troupe.model.causal.BootstrapImageCodec;
import dev.troupe.storage.Store;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Reads one bootstrap image of this DC for a DC added to the set (docs/ARCHITECTURE.md,
 * "Bootstrapping a new data centre"), one framed record at a time ({@link #next}), so the server
 * streams it with backpressure and never holds more than a page of entity ids: the start vector
 * ({@link ReplicationShell#imageVector}, taken and held against truncation before any entity is
 * read), every stored entity's current state (the store's latest committed state: cache,
 * checkpoint and journal, every key, hidden ones and markers included; the type declarations are
 * an entity like any other) with its version here, then the end vector taken after the last one.
 *
 * <p><b>Why no pause.</b> Each entity's state contains every transaction at or below the start
 * vector (they were in the store before it was read) and possibly later ones, up to the end
 * vector: the receiving DC skips those per entity when it pulls the logs after the start vector
 * (the {@code $replicated} markers for other origins, its {@code $installed} marker for this one).
 *
 * <p>One thread at a time (the server's stream pulls it on a blocking dispatcher). {@link #close}
 * keeps the truncation hold {@code holdAfterMillis} more (the new DC still has to pull), whether
 * the image ended or was cut.
 */
public final class BootstrapImageReader implements AutoCloseable {
  private final Store store;
  private final ReplicationShell shell;
  private final BootstrapSettings settings;
  private final ReplicationShell.TruncationHold hold;
  private final ArrayDeque<EntityId> page = new ArrayDeque<>();
  private EntityId last;
  private boolean began;
  private boolean entitiesDone;
  private boolean ended;
  private long entityCount;

  public BootstrapImageReader(Store store, ReplicationShell shell, int forDc,
      BootstrapSettings settings) {
    this.store = store;
    this.shell = shell;
    this.settings = settings;
    this.hold = shell.holdTruncation(forDc);
  }

  /** The start vector. */
  public BootstrapImage.Began began() {
    return new BootstrapImage.Began(shell.dataCentreId(), hold.vector());
  }

  /** The next record's frame, null after the last. */
  public byte[] next() {
    if (!began) {
      began = true;
      return BootstrapImageCodec.encode(began());
    }
    if (ended) {
      return null;
    }
    if (!entitiesDone && page.isEmpty()) {
      List<EntityId> next = store.entities(last, settings.readPageEntities());
      if (next.isEmpty()) {
        entitiesDone = true;
      } else {
        page.addAll(next);
        last = next.get(next.size() - 1);
      }
    }
    if (!page.isEmpty()) {
      EntityId entity = page.poll();
      EntityState state = store.read(entity);
      entityCount++;
      return BootstrapImageCodec.encode(
          new BootstrapImage.EntityImage(entity, state.version(), state));
    }
    ended = true;
    return BootstrapImageCodec.encode(
        new BootstrapImage.Ended(shell.imageEndVector(), entityCount));
  }

  @Override
  public void close() {
    hold.release(settings.holdAfterMillis());
  }
}
