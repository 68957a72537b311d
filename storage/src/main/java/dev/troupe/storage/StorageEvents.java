package dev.troupe.storage;

/**
 * What the storage engine reports as it happens, so that the layer that owns logging and process
 * policy (the runtime) can say it loudly: storage itself neither logs nor exits. Called on the
 * thread that met the event (a writer, a reader); implementations must be quick and must not call
 * back into the store.
 */
public interface StorageEvents {
  StorageEvents NONE = new StorageEvents() {
    @Override
    public void storeFailed(Throwable cause) {}

    @Override
    public void corruptionDetected(String where, CorruptDataException damage) {}
  };

  /** The store failed and accepts no more commits; called once, with the first cause. */
  void storeFailed(Throwable cause);

  /** A read met data that failed its checksum; called for every such read. */
  void corruptionDetected(String where, CorruptDataException damage);

  /**
   * A partition this node acquired was fenced ({@link PartitionOwnership#ACQUIRED}): another node
   * acquired it since, so its write failed and nothing of it was written. The partition refuses
   * every commit with {@code not_owner} from now on; the rest of the store is unaffected. The
   * runtime stops the partition's host and calls {@link Store#releasePartition} (off the writer
   * thread this is called on). Called once per acquisition.
   */
  default void partitionLost(int partition, FencedException cause) {}
}
