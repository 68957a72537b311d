package dev.troupe.storage;

import java.util.List;

/**
 * One node's view of a disk several nodes share (as they share a PostgreSQL database): every call
 * goes to the shared disk, except {@link #close}, which ends only this view, so that the first
 * node to close does not close the disk under the others. Tests close the shared disk themselves.
 */
final class SharedDisk implements KeyValueDisk {
  private final KeyValueDisk shared;
  /** Runs before every write (a test's hook to hold or count writes); null: none. */
  private final Runnable beforeWrite;

  SharedDisk(KeyValueDisk shared) {
    this(shared, null);
  }

  SharedDisk(KeyValueDisk shared, Runnable beforeWrite) {
    this.shared = shared;
    this.beforeWrite = beforeWrite;
  }

  @Override
  public Batch newBatch() {
    return shared.newBatch();
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    if (beforeWrite != null) {
      beforeWrite.run();
    }
    shared.write(batch, sync);
  }

  @Override
  public byte[] get(Column column, byte[] key) throws DiskException {
    return shared.get(column, key);
  }

  @Override
  public List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot)
      throws DiskException {
    return shared.multiGet(column, keys, snapshot);
  }

  @Override
  public Snapshot snapshot() {
    return shared.snapshot();
  }

  @Override
  public Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound) {
    return shared.cursor(column, snapshot, lowerBound, upperBound);
  }

  @Override
  public void flushWriteAheadLog(boolean sync) throws DiskException {
    shared.flushWriteAheadLog(sync);
  }

  @Override
  public long acquirePartition(int partition, int nodeId) throws DiskException {
    return shared.acquirePartition(partition, nodeId);
  }

  @Override
  public long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch)
      throws DiskException {
    return shared.acquirePartitionIfEpoch(partition, nodeId, expectedEpoch);
  }

  @Override
  public PartitionOwner ownerOf(int partition) throws DiskException {
    return shared.ownerOf(partition);
  }

  @Override
  public void close() {
    // Only this node's view ends; the disk stays open for the others.
  }
}
