package dev.troupe.sim;

import dev.troupe.storage.DiskException;
import dev.troupe.storage.KeyValueDisk;
import dev.troupe.storage.MemoryDisk;
import dev.troupe.storage.SharedDiskView;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The data centre's one database in the shared-store mode ({@code --shared-store}): a single
 * {@link MemoryDisk} that every simulated node's {@code RocksStore} opens through its own {@link
 * View} (as every node of a data centre opens the same PostgreSQL database), plus an auditor that
 * watches every batch applied to it.
 *
 * <p><b>Why a view.</b> A node that crashes drops its store, and one that closes it closes its disk:
 * a view's {@link View#close} ends only that node's handle, never the database under the others.
 * A node crash is a process crash: the database server keeps everything it applied (synced or
 * not), so a view is simply abandoned.
 *
 * <p><b>The audit</b> ({@link #violation}): every journal record a batch puts is noted with the
 * partition's fence the batch carried (partition, owner epoch), the writing node, and the owner
 * epoch the disk held for the partition when the batch was applied. Under {@code
 * PartitionOwnership.ACQUIRED} a journal record must be fenced with its partition's current owner
 * epoch, written by the node that acquired that epoch: otherwise two owners wrote one partition's
 * journal interleaved (a zombie's write after a hand-off). The disk's fence already refuses such
 * batches; the audit checks it independently, which is what catches {@link
 * SimulatedNode.Mutation#UNFENCED_WRITES} (views that drop the fence).
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SharedDatabase {
  /** The database's disk; a database crash replaces the handle (views follow it). */
  private MemoryDisk disk = new MemoryDisk();
  private long crashes;
  private final boolean dropFences;
  /** Per partition and owner epoch, the node that acquired it. */
  private final Map<Integer, Map<Long, Integer>> acquirers = new HashMap<>();
  /** Per partition, the greatest owner epoch a journal record was written under so far. */
  private final Map<Integer, Long> lastJournalEpoch = new HashMap<>();
  private String violation;
  private long fencedJournalRecords;
  private long acquisitions;

  /** @param dropFences the deliberate breakage: views pass no fence to the disk */
  SharedDatabase(boolean dropFences) {
    this.dropFences = dropFences;
  }

  /** Node {@code nodeId}'s handle on the database: its close does not close the database. */
  View viewFor(int nodeId) {
    return new View(nodeId);
  }

  /** The database itself, for the simulator's observations (journal ever written, stored keys). */
  MemoryDisk disk() {
    return disk;
  }

  /**
   * The database server loses power (every node's store must be dropped first: they crash with
   * it): of what it applied since its last sync, a prefix survives or nothing ({@link
   * MemoryDisk#crash}). Owner epochs are synced as they are acquired, so they survive.
   */
  void crash(java.util.random.RandomGenerator random, double keepUnsyncedPrefixProbability) {
    disk = disk.crash(random, keepUnsyncedPrefixProbability);
    crashes++;
  }

  long crashes() {
    return crashes;
  }

  /** The first journal record written by a node that did not own its partition's epoch, or null. */
  String violation() {
    return violation;
  }

  /** Journal records the audit checked (each carried a fence). */
  long auditedJournalRecords() {
    return fencedJournalRecords;
  }

  /** Owner epochs acquired over the run (partition hand-offs, the first acquisitions included). */
  long acquisitions() {
    return acquisitions;
  }

  private void audit(int nodeId, List<long[]> fences, List<byte[]> journalKeys) {
    for (byte[] key : journalKeys) {
      ByteBuffer buffer = ByteBuffer.wrap(key);
      int partition = Short.toUnsignedInt(buffer.getShort());
      long sequence = buffer.getLong();
      Long epoch = null;
      for (long[] fence : fences) {
        if (fence[0] == partition) {
          epoch = fence[1];
        }
      }
      KeyValueDisk.PartitionOwner owner;
      try {
        owner = disk.ownerOf(partition);
      } catch (DiskException e) {
        throw new IllegalStateException(e);
      }
      String record = "journal record " + sequence + " of partition " + partition + " written by node "
          + nodeId;
      if (epoch == null) {
        fail(record + " without a fence");
        continue;
      }
      fencedJournalRecords++;
      Integer acquirer = acquirers.getOrDefault(partition, Map.of()).get(epoch);
      if (owner == null || owner.epoch() != epoch) {
        fail(record + " under owner epoch " + epoch + " while node "
            + (owner == null ? "none" : owner.nodeId() + " owned it under epoch " + owner.epoch())
            + ": two owners wrote its journal interleaved");
      } else if (acquirer == null || acquirer != nodeId) {
        fail(record + " under owner epoch " + epoch + ", which node " + acquirer + " acquired");
      } else if (lastJournalEpoch.getOrDefault(partition, 0L) > epoch) {
        fail(record + " under owner epoch " + epoch + " after records of epoch "
            + lastJournalEpoch.get(partition));
      }
      lastJournalEpoch.merge(partition, epoch, Math::max);
    }
  }

  private void fail(String what) {
    if (violation == null) {
      violation = what;
    }
  }

  /**
   * One node's handle on the shared database (see the class comment): a {@link SharedDiskView} of
   * the database's current disk whose batches are audited and whose acquisitions are noted.
   */
  final class View extends SharedDiskView {
    private final int nodeId;

    private View(int nodeId) {
      super(() -> disk);
      this.nodeId = nodeId;
    }

    @Override
    public Batch newBatch() {
      return new AuditedBatch(shared().newBatch());
    }

    @Override
    public void write(Batch batch, boolean sync) throws DiskException {
      AuditedBatch audited = (AuditedBatch) batch;
      shared().write(audited.inner, sync); // throws FencedException, writing nothing, if fenced
      audit(nodeId, audited.fences, audited.journalKeys);
    }

    @Override
    public long acquirePartition(int partition, int acquiringNode) throws DiskException {
      long epoch = shared().acquirePartition(partition, acquiringNode);
      acquirers.computeIfAbsent(partition, ignored -> new HashMap<>()).put(epoch, acquiringNode);
      acquisitions++;
      return epoch;
    }

    @Override
    public long acquirePartitionIfEpoch(int partition, int acquiringNode, long expectedEpoch)
        throws DiskException {
      long epoch = shared().acquirePartitionIfEpoch(partition, acquiringNode, expectedEpoch);
      if (epoch != 0) {
        acquirers.computeIfAbsent(partition, ignored -> new HashMap<>()).put(epoch, acquiringNode);
        acquisitions++;
      }
      return epoch;
    }
  }

  /** A batch that notes its fences and journal keys for the audit. */
  private final class AuditedBatch implements KeyValueDisk.Batch {
    final KeyValueDisk.Batch inner;
    final List<long[]> fences = new ArrayList<>();
    final List<byte[]> journalKeys = new ArrayList<>();

    AuditedBatch(KeyValueDisk.Batch inner) {
      this.inner = inner;
    }

    @Override
    public void put(KeyValueDisk.Column column, byte[] key, byte[] value) throws DiskException {
      if (column == KeyValueDisk.Column.JOURNAL) {
        journalKeys.add(key.clone());
      }
      inner.put(column, key, value);
    }

    @Override
    public void delete(KeyValueDisk.Column column, byte[] key) throws DiskException {
      inner.delete(column, key);
    }

    @Override
    public void deleteRange(KeyValueDisk.Column column, byte[] fromInclusive, byte[] toExclusive)
        throws DiskException {
      inner.deleteRange(column, fromInclusive, toExclusive);
    }

    @Override
    public void fence(int partition, long epoch) {
      fences.add(new long[] {partition, epoch});
      if (!dropFences) {
        inner.fence(partition, epoch);
      }
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
