package dev.troupe.storage;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.random.RandomGenerator;
import org.pcollections.TreePMap;
import org.pcollections.TreePSet;

/**
 * An in-memory {@link KeyValueDisk} that loses power on request: the deterministic simulator and
 * tests run the real {@link RocksStore} on it.
 *
 * <p><b>State.</b> The contents are one persistent sorted map per {@link Column} (pcollections'
 * {@code TreePMap}, keys in unsigned lexicographic order like RocksDB's default comparator). Every
 * written batch produces a new immutable version of the contents sharing structure with the
 * previous one (O(log n) per key written), so a snapshot or a cursor is just a reference to a
 * version: isolated from later writes at no copying cost, and safe to read without locks.
 *
 * <p><b>Durability</b>, mirroring RocksDB's write-ahead log under power loss: written batches form
 * a log in write order. A batch written with {@code sync}, or {@code flushWriteAheadLog(true)},
 * makes itself and every earlier batch durable. {@link #crash} (power loss) keeps the durable
 * version and, of the batches after the last sync, either none or, with the given probability, a
 * prefix of them; each batch whole or not at all (RocksDB checksums its log per batch). Batches that
 * survive a crash are durable from then on (they were on the platter). {@link #restart} (a process
 * crash or a clean restart, no power loss) keeps every written batch; those not yet synced stay
 * exposed to a later power loss until the next sync.
 *
 * <p><b>Incarnations.</b> {@link #crash} and {@link #restart} end this handle and return the next
 * incarnation's, sharing the same platter; so does {@link #close} end it (a closed handle can still
 * be crashed or restarted). A store left over from before a crash therefore cannot touch the new
 * incarnation: every call on an ended handle fails, with {@link DiskException} where the method
 * declares it and with {@link IllegalStateException} otherwise (snapshots, cursors), except reads
 * at a snapshot taken before the end: snapshots and cursors opened before it keep reading their
 * immutable version.
 *
 * <p><b>Damage</b> ({@link #damage}): bytes of a stored key that no longer match their checksum, as
 * after a flipped bit in an SST block. A point read of a damaged key throws {@link
 * CorruptDataException}; a cursor that reaches one stops there and its {@link Cursor#isValid}
 * throws, as RocksDB's iterators report a failed block checksum through their status. Damage is on
 * the platter: it survives crashes and restarts, at every snapshot, until the key is written or
 * deleted again.
 *
 * <p><b>Observation</b> (for simulators and tests, not part of the disk contract): {@link
 * #durableJournalValuesEverWritten} lists every journal put that became durable, in log order,
 * including those truncation deleted later, so a checker can tell which transactions committed even
 * when their acknowledgement was lost.
 *
 * <p>Thread-safe: writes and version changes happen under the platter's lock; reads take the
 * current version under it and then read without locking.
 */
public final class MemoryDisk implements KeyValueDisk {
  private static final Comparator<byte[]> UNSIGNED_ORDER = Arrays::compareUnsigned;
  private static final int COLUMN_COUNT = Column.values().length;

  /** What survives from one incarnation to the next: the contents and the write-ahead log. */
  private static final class Platter {
    /** The contents after every durable batch. */
    Contents durable = Contents.EMPTY;
    /** The contents after every written batch. */
    Contents current = Contents.EMPTY;
    /** Batches written after the last sync, in order, each with the contents it produced. */
    final List<UnsyncedBatch> unsynced = new ArrayList<>();
    final List<byte[]> durableJournalValues = new ArrayList<>();
    /** The incarnation every call must come through; the others have ended. */
    MemoryDisk live;
    /**
     * Damaged keys per column (see {@link #damage}); replaced, never mutated, so cursors read it
     * without the lock.
     */
    volatile List<TreePSet<byte[]>> damaged = noDamage();
    /**
     * The deliberate breakage of {@link #ignoreDamageAsUncheckedRocksDbDid}: damage is passed over
     * in silence instead of detected. False except in the simulator's mutation runs.
     */
    volatile boolean damageIgnored;
    /** Owner epochs: written synchronously by acquirePartition, so durable (survive crashes). */
    final PartitionEpochs epochs = new PartitionEpochs();

    private static List<TreePSet<byte[]>> noDamage() {
      List<TreePSet<byte[]>> columns = new ArrayList<>(COLUMN_COUNT);
      for (int i = 0; i < COLUMN_COUNT; i++) {
        columns.add(TreePSet.empty(UNSIGNED_ORDER));
      }
      return List.copyOf(columns);
    }

    boolean isDamaged(Column column, byte[] key) {
      TreePSet<byte[]> keys = damaged.get(column.ordinal());
      return !keys.isEmpty() && keys.contains(key);
    }

    /** How many times {@link #sync} ran. */
    long syncs;

    /** Makes every written batch durable. */
    void sync() {
      syncs++;
      for (UnsyncedBatch batch : unsynced) {
        durableJournalValues.addAll(batch.journalValues());
      }
      unsynced.clear();
      durable = current;
    }
  }

  /** One immutable version of every column. */
  private record Contents(List<TreePMap<byte[], byte[]>> columns) {
    static final Contents EMPTY = empty();

    private static Contents empty() {
      List<TreePMap<byte[], byte[]>> columns = new ArrayList<>(COLUMN_COUNT);
      for (int i = 0; i < COLUMN_COUNT; i++) {
        columns.add(TreePMap.empty(UNSIGNED_ORDER));
      }
      return new Contents(List.copyOf(columns));
    }

    TreePMap<byte[], byte[]> column(Column column) {
      return columns.get(column.ordinal());
    }
  }

  /** @param journalValues the values of the batch's journal puts, in order */
  private record UnsyncedBatch(Contents after, List<byte[]> journalValues) {}

  /** A put ({@code value} set), a delete, or a range deletion ({@code toExclusive} set). */
  private record Mutation(Column column, byte[] key, byte[] value, byte[] toExclusive) {}

  private final Platter platter;
  /** Guarded by the platter: set once this handle is closed. */
  private boolean closed;

  /** A new, empty disk. */
  public MemoryDisk() {
    this(new Platter());
  }

  private MemoryDisk(Platter platter) {
    this.platter = platter;
    platter.live = this;
  }

  // ---------------------------------------------------------------------------- power and restarts

  /**
   * Power loss: returns the disk as the next incarnation finds it, and ends this handle. The durable
   * contents survive; of the batches written since the last sync, with probability {@code
   * keepPrefixProbability} the first k survive for k drawn uniformly from 1 to their number, and
   * otherwise none. Draws from {@code random} only when such batches exist.
   */
  public MemoryDisk crash(RandomGenerator random, double keepPrefixProbability) {
    synchronized (platter) {
      requireLatest();
      int kept = 0;
      if (!platter.unsynced.isEmpty() && random.nextDouble() < keepPrefixProbability) {
        kept = 1 + random.nextInt(platter.unsynced.size());
      }
      // The surviving prefix was written out before the power went: durable from now on.
      List<UnsyncedBatch> survivors = new ArrayList<>(platter.unsynced.subList(0, kept));
      platter.unsynced.clear();
      platter.unsynced.addAll(survivors);
      platter.current = kept == 0 ? platter.durable : survivors.get(kept - 1).after();
      platter.sync();
      return new MemoryDisk(platter);
    }
  }

  /**
   * A restart without power loss (the process crashed or closed): every written batch survives,
   * those not yet synced still unsynced. Ends this handle and returns the next incarnation's.
   */
  public MemoryDisk restart() {
    synchronized (platter) {
      requireLatest();
      return new MemoryDisk(platter);
    }
  }

  /**
   * Damages the stored bytes of {@code key} in {@code column} (see the class comment); returns
   * false, changing nothing, if the column holds no such key now. Fault injection for the
   * simulator and tests; works on any incarnation of the platter.
   */
  public boolean damage(Column column, byte[] key) {
    synchronized (platter) {
      if (platter.current.column(column).get(key) == null) {
        return false;
      }
      List<TreePSet<byte[]>> damaged = new ArrayList<>(platter.damaged);
      damaged.set(column.ordinal(), damaged.get(column.ordinal()).plus(key.clone()));
      platter.damaged = List.copyOf(damaged);
      return true;
    }
  }

  /**
   * The keys of {@code column} in {@code [fromInclusive, toExclusive)} stored now, in order: what a
   * fault injector may {@link #damage}. Fresh copies.
   */
  public List<byte[]> storedKeys(Column column, byte[] fromInclusive, byte[] toExclusive) {
    synchronized (platter) {
      List<byte[]> keys = new ArrayList<>();
      for (byte[] key : platter.current.column(column)
          .subMap(fromInclusive, true, toExclusive, false).keySet()) {
        keys.add(key.clone());
      }
      return keys;
    }
  }

  /**
   * A deliberate breakage, for the simulator's proof that its checks catch a store that serves
   * damaged data (never for production or ordinary tests): from now on, on every incarnation of the
   * platter, damage is ignored the way the engine ignored it before reads checked RocksDB's
   * iterator status: a cursor that reaches a damaged key reports the end of its range ({@link
   * Cursor#isValid} false, no exception) and a point read of a damaged key answers absent (null).
   */
  public void ignoreDamageAsUncheckedRocksDbDid() {
    platter.damageIgnored = true;
  }

  /**
   * How many times the disk synced (a synced batch, a flush of the write-ahead log, a crash's
   * survivors): a batch written before a count was read is durable once the count has grown. A
   * simulator tells from it when a write without a sync of its own became durable.
   */
  public long syncs() {
    synchronized (platter) {
      return platter.syncs;
    }
  }

  /** Batches written since the last sync: what a {@link #crash} may lose. */
  public int unsyncedBatches() {
    synchronized (platter) {
      return platter.unsynced.size();
    }
  }

  /**
   * Observation for simulators and tests: the value of every journal put that became durable, in
   * write-ahead-log order, over every incarnation of this disk, including puts later deleted (by
   * truncation). Fresh copies.
   */
  public List<byte[]> durableJournalValuesEverWritten() {
    synchronized (platter) {
      List<byte[]> values = new ArrayList<>(platter.durableJournalValues.size());
      for (byte[] value : platter.durableJournalValues) {
        values.add(value.clone());
      }
      return values;
    }
  }

  private void requireLatest() {
    if (platter.live != this) {
      throw new IllegalStateException("this disk incarnation already crashed or restarted");
    }
  }

  /** The contents to read, if this handle is still the live one and open. */
  private Contents currentForReading() {
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new IllegalStateException(ended());
      }
      return platter.current;
    }
  }

  private String ended() {
    return closed ? "the disk is closed" : "the disk crashed or restarted under this handle";
  }

  // ------------------------------------------------------------------------------- KeyValueDisk

  @Override
  public long acquirePartition(int partition, int nodeId) throws DiskException {
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      return platter.epochs.acquire(partition, nodeId);
    }
  }

  @Override
  public long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch)
      throws DiskException {
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      return platter.epochs.acquireIfEpoch(partition, nodeId, expectedEpoch);
    }
  }

  @Override
  public PartitionOwner ownerOf(int partition) throws DiskException {
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      return platter.epochs.ownerOf(partition);
    }
  }

  /**
   * Its simulated power loss ({@link #crash}) is the node's: the next incarnation opens what
   * survived.
   */
  @Override
  public boolean crashesOnlyWithThisProcess() {
    return true;
  }

  @Override
  public Batch newBatch() {
    return new MemoryBatch();
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    if (!(batch instanceof MemoryBatch memoryBatch) || memoryBatch.owner() != this) {
      throw new IllegalArgumentException("a batch from another disk");
    }
    List<Mutation> mutations = memoryBatch.mutations();
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      platter.epochs.check(memoryBatch.fences);
      List<TreePMap<byte[], byte[]>> columns = new ArrayList<>(platter.current.columns());
      List<byte[]> journalValues = new ArrayList<>();
      for (Mutation mutation : mutations) {
        int column = mutation.column().ordinal();
        TreePMap<byte[], byte[]> map = columns.get(column);
        if (mutation.toExclusive() != null) {
          map = map.minusAll(
              new ArrayList<>(map.subMap(mutation.key(), true, mutation.toExclusive(), false).keySet()));
        } else if (mutation.value() != null) {
          map = map.plus(mutation.key(), mutation.value());
          if (mutation.column() == Column.JOURNAL) {
            journalValues.add(mutation.value());
          }
        } else {
          map = map.minus(mutation.key());
        }
        columns.set(column, map);
      }
      platter.current = new Contents(List.copyOf(columns));
      repairRewritten(mutations);
      platter.unsynced.add(new UnsyncedBatch(platter.current, List.copyOf(journalValues)));
      if (sync) {
        platter.sync();
      }
    }
  }

  /** Keys written or deleted again hold fresh bytes: their damage is gone. Under the lock. */
  private void repairRewritten(List<Mutation> mutations) {
    List<TreePSet<byte[]>> damaged = platter.damaged;
    boolean any = false;
    for (TreePSet<byte[]> keys : damaged) {
      any |= !keys.isEmpty();
    }
    if (!any) {
      return;
    }
    List<TreePSet<byte[]>> repaired = new ArrayList<>(damaged);
    for (Mutation mutation : mutations) {
      int column = mutation.column().ordinal();
      TreePSet<byte[]> keys = repaired.get(column);
      if (keys.isEmpty()) {
        continue;
      }
      repaired.set(column, mutation.toExclusive() != null
          ? keys.minusAll(new ArrayList<>(
              keys.subSet(mutation.key(), true, mutation.toExclusive(), false)))
          : keys.minus(mutation.key()));
    }
    platter.damaged = List.copyOf(repaired);
  }

  private void checkIntact(Column column, byte[] key) {
    if (platter.isDamaged(column, key)) {
      throw new CorruptDataException(
          "the " + column + " column family failed its checksum (a damaged key)");
    }
  }

  @Override
  public byte[] get(Column column, byte[] key) throws DiskException {
    Contents contents;
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      contents = platter.current;
    }
    byte[] value = contents.column(column).get(key);
    if (value != null && platter.damageIgnored && platter.isDamaged(column, key)) {
      return null; // the breakage: damaged reads as absent
    }
    if (value != null) {
      checkIntact(column, key);
    }
    return copy(value);
  }

  @Override
  public List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot)
      throws DiskException {
    Contents contents;
    if (snapshot == null) {
      synchronized (platter) {
        if (platter.live != this || closed) {
          throw new DiskException(ended());
        }
        contents = platter.current;
      }
    } else {
      contents = contentsOf(snapshot);
    }
    TreePMap<byte[], byte[]> map = contents.column(column);
    List<byte[]> values = new ArrayList<>(keys.size());
    for (byte[] key : keys) {
      byte[] value = map.get(key);
      if (value != null && platter.damageIgnored && platter.isDamaged(column, key)) {
        value = null; // the breakage: damaged reads as absent
      }
      if (value != null) {
        checkIntact(column, key);
      }
      values.add(copy(value));
    }
    return values;
  }

  @Override
  public Snapshot snapshot() {
    return new MemorySnapshot(currentForReading());
  }

  @Override
  public Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound) {
    // Without a snapshot, the version current now: like RocksDB's implicit iterator snapshot.
    Contents contents = snapshot == null ? currentForReading() : contentsOf(snapshot);
    return new MemoryCursor(platter, column, contents.column(column), copy(lowerBound),
        copy(upperBound));
  }

  @Override
  public void flushWriteAheadLog(boolean sync) throws DiskException {
    synchronized (platter) {
      if (platter.live != this || closed) {
        throw new DiskException(ended());
      }
      if (sync) {
        platter.sync();
      }
    }
  }

  @Override
  public void close() {
    synchronized (platter) {
      closed = true;
    }
  }

  private Contents contentsOf(Snapshot snapshot) {
    if (!(snapshot instanceof MemorySnapshot memorySnapshot) || memorySnapshot.owner() != this) {
      throw new IllegalArgumentException("a snapshot of another disk");
    }
    return memorySnapshot.contents();
  }

  private static byte[] copy(byte[] bytes) {
    return bytes == null ? null : bytes.clone();
  }

  /** Records mutations; applied by {@link #write}. Keys and values are copied when recorded. */
  private final class MemoryBatch implements Batch {
    private final List<Mutation> mutations = new ArrayList<>();
    final List<PartitionEpochs.Fence> fences = new ArrayList<>();
    private boolean batchClosed;

    MemoryDisk owner() {
      return MemoryDisk.this;
    }

    List<Mutation> mutations() {
      if (batchClosed) {
        throw new IllegalStateException("the batch is closed");
      }
      return mutations;
    }

    @Override
    public void put(Column column, byte[] key, byte[] value) {
      mutations().add(new Mutation(column, key.clone(), value.clone(), null));
    }

    @Override
    public void delete(Column column, byte[] key) {
      mutations().add(new Mutation(column, key.clone(), null, null));
    }

    @Override
    public void deleteRange(Column column, byte[] fromInclusive, byte[] toExclusive) {
      if (Arrays.compareUnsigned(fromInclusive, toExclusive) > 0) {
        throw new IllegalArgumentException("a range deletion whose end is before its start");
      }
      mutations().add(new Mutation(column, fromInclusive.clone(), null, toExclusive.clone()));
    }

    @Override
    public void fence(int partition, long epoch) {
      mutations();
      fences.add(new PartitionEpochs.Fence(partition, epoch));
    }

    @Override
    public void close() {
      batchClosed = true;
    }
  }

  private final class MemorySnapshot implements Snapshot {
    private final Contents contents;
    private boolean released;

    MemorySnapshot(Contents contents) {
      this.contents = contents;
    }

    MemoryDisk owner() {
      return MemoryDisk.this;
    }

    Contents contents() {
      if (released) {
        throw new IllegalStateException("the snapshot was released");
      }
      return contents;
    }

    @Override
    public void close() {
      released = true;
    }
  }

  /**
   * A position in one immutable column version, as a key: every move is one O(log n) lookup
   * relative to it, so the cursor holds no iterator state and respects its bounds by construction.
   */
  private static final class MemoryCursor implements Cursor {
    private final Platter platter;
    private final Column column;
    private final TreePMap<byte[], byte[]> map;
    private final byte[] lowerBound;
    private final byte[] upperBound;
    private Map.Entry<byte[], byte[]> entry;
    /** The cursor stopped at a damaged key: not valid, and {@link #isValid} says why. */
    private boolean stoppedAtDamage;
    private boolean cursorClosed;

    MemoryCursor(Platter platter, Column column, TreePMap<byte[], byte[]> map, byte[] lowerBound,
        byte[] upperBound) {
      this.platter = platter;
      this.column = column;
      this.map = map;
      this.lowerBound = lowerBound;
      this.upperBound = upperBound;
    }

    @Override
    public void seekToFirst() {
      requireOpen();
      // TreePMap's firstEntry throws on an empty map, where TreeMap's returns null.
      Map.Entry<byte[], byte[]> first = lowerBound != null ? map.ceilingEntry(lowerBound)
          : map.isEmpty() ? null : map.firstEntry();
      position(belowUpper(first));
    }

    @Override
    public void seek(byte[] target) {
      requireOpen();
      // Like RocksDB, a target below the lower bound seeks to the bound.
      byte[] from = lowerBound != null && Arrays.compareUnsigned(target, lowerBound) < 0
          ? lowerBound : target;
      position(belowUpper(map.ceilingEntry(from)));
    }

    @Override
    public void seekForPrev(byte[] target) {
      requireOpen();
      // Like RocksDB, a target at or above the (exclusive) upper bound seeks below the bound.
      Map.Entry<byte[], byte[]> found =
          upperBound != null && Arrays.compareUnsigned(target, upperBound) >= 0
              ? map.lowerEntry(upperBound)
              : map.floorEntry(target);
      position(found != null && lowerBound != null
          && Arrays.compareUnsigned(found.getKey(), lowerBound) < 0 ? null : found);
    }

    @Override
    public void next() {
      requireValid();
      position(belowUpper(map.higherEntry(entry.getKey())));
    }

    /** Moves to {@code found}, or stops (invalid) if its bytes are damaged, as RocksDB does. */
    private void position(Map.Entry<byte[], byte[]> found) {
      stoppedAtDamage = found != null && platter.isDamaged(column, found.getKey());
      entry = stoppedAtDamage ? null : found;
    }

    @Override
    public boolean isValid() {
      requireOpen();
      if (stoppedAtDamage && !platter.damageIgnored) {
        throw new CorruptDataException(
            "the " + column + " column family failed its checksum while being read");
      }
      return entry != null;
    }

    @Override
    public byte[] key() {
      requireValid();
      return entry.getKey().clone();
    }

    @Override
    public byte[] value() {
      requireValid();
      return entry.getValue().clone();
    }

    @Override
    public void close() {
      cursorClosed = true;
      entry = null;
    }

    private Map.Entry<byte[], byte[]> belowUpper(Map.Entry<byte[], byte[]> found) {
      return found != null && upperBound != null
          && Arrays.compareUnsigned(found.getKey(), upperBound) >= 0 ? null : found;
    }

    private void requireOpen() {
      if (cursorClosed) {
        throw new IllegalStateException("the cursor is closed");
      }
    }

    private void requireValid() {
      requireOpen();
      if (entry == null) {
        throw new IllegalStateException("the cursor is not positioned on a key");
      }
    }
  }
}
