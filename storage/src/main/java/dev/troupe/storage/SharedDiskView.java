package dev.troupe.storage;

import java.util.List;
import java.util.function.Supplier;

/**
 * One node's handle on a disk several nodes share, as the nodes of a data centre share one
 * PostgreSQL database: every call goes to the shared disk, except {@link #close}, which ends only
 * this handle, so that the first node to close (or crash and be dropped) does not close the disk
 * under the others. Whoever made the shared disk closes it. For the tests and the simulator, which
 * play several nodes on one in-memory disk; a subclass may watch what passes (the simulator's
 * audit).
 *
 * <p>The shared disk is asked of {@code disk} on every call, so the handle follows a disk that is
 * replaced (the simulator's database crash).
 */
public class SharedDiskView implements KeyValueDisk {
  private final Supplier<? extends KeyValueDisk> disk;

  /** A handle on whatever {@code disk} supplies at each call. */
  public SharedDiskView(Supplier<? extends KeyValueDisk> disk) {
    this.disk = disk;
  }

  /** A handle on {@code shared}. */
  public static SharedDiskView of(KeyValueDisk shared) {
    return new SharedDiskView(() -> shared);
  }

  /** The shared disk now. */
  protected final KeyValueDisk shared() {
    return disk.get();
  }

  /** Shared: the disk can crash and come back while this node runs on. */
  @Override
  public boolean crashesOnlyWithThisProcess() {
    return false;
  }

  @Override
  public Batch newBatch() {
    return shared().newBatch();
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    shared().write(batch, sync);
  }

  @Override
  public byte[] get(Column column, byte[] key) throws DiskException {
    return shared().get(column, key);
  }

  @Override
  public List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot)
      throws DiskException {
    return shared().multiGet(column, keys, snapshot);
  }

  @Override
  public Snapshot snapshot() {
    return shared().snapshot();
  }

  @Override
  public Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound) {
    return shared().cursor(column, snapshot, lowerBound, upperBound);
  }

  @Override
  public void flushWriteAheadLog(boolean sync) throws DiskException {
    shared().flushWriteAheadLog(sync);
  }

  @Override
  public long acquirePartition(int partition, int nodeId) throws DiskException {
    return shared().acquirePartition(partition, nodeId);
  }

  @Override
  public long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch)
      throws DiskException {
    return shared().acquirePartitionIfEpoch(partition, nodeId, expectedEpoch);
  }

  @Override
  public PartitionOwner ownerOf(int partition) throws DiskException {
    return shared().ownerOf(partition);
  }

  /** Ends only this handle: the shared disk stays open for the other nodes. */
  @Override
  public void close() {
    // Nothing of this node's to release: the handle holds no resource of its own.
  }
}
