package dev.troupe.storage;

import dev.troupe.model.Invariants;

/**
 * How {@link RocksDisk} tunes RocksDB's reads of data larger than the object cache, parsed once
 * from {@code troupe.storage.rocksdb} in reference.conf (see there for the meaning and units of
 * each). Immutable.
 *
 * @param blockCacheBytes capacity of the one LRU block cache every column family shares
 *     (uncompressed data blocks, and index and filter blocks when {@code
 *     cacheIndexAndFilterBlocks}); native memory, outside the Java heap, taken as blocks are read
 * @param bloomBitsPerKey bits per key of the Bloom filters: whole keys on the journal (read by point
 *     lookups), entity prefixes on the index and checkpoints (read by entity-bounded cursors); 0
 *     for none on the index and checkpoints (the journal keeps its filter of 10 bits per key)
 * @param bloomPrefixBytes the leading key bytes the index's and checkpoints' prefix filters are
 *     built on (RocksDB's capped prefix extractor): an entity whose key prefix (two length bytes,
 *     its type, a separator and its id) is at least this long gets its table files skipped by the
 *     filter when they hold nothing of it; a shorter one is read as without the filter
 * @param cacheIndexAndFilterBlocks false: every open table file holds its index and filter blocks
 *     in memory (pinned, outside the block cache; every file is kept open); true: they are charged
 *     to the block cache (bounded by it, with high priority, level 0's pinned)
 * @param journalBlobMinBytes journal records of at least this many bytes are kept in blob files
 *     (RocksDB's key-value separation), apart from their keys, so compaction rewrites only the
 *     keys and a blob file is deleted once truncation removed every record in it; 0: none, every
 *     record in the table files
 */
public record RocksDiskSettings(
    long blockCacheBytes, int bloomBitsPerKey, int bloomPrefixBytes,
    boolean cacheIndexAndFilterBlocks, long journalBlobMinBytes) {
  /** The default {@code bloom-bits-per-key}: about a 1% false-positive rate. */
  public static final int DEFAULT_BLOOM_BITS_PER_KEY = 10;

  /**
   * The default {@code bloom-prefix-bytes}: the length bytes, a short type name, the separator
   * and the first characters of the id (e.g. YCSB's {@code usertable/user6284781860}).
   */
  public static final int DEFAULT_BLOOM_PREFIX_BYTES = 24;

  /**
   * The default {@code journal-blob-min-bytes}: a record that assigns a value of a few hundred
   * bytes or more (a 1 KB YCSB insert) goes to a blob file; a counter increment or a short update
   * (YCSB A's one 100-byte field) stays with its key, where a blob reference would save little.
   */
  public static final long DEFAULT_JOURNAL_BLOB_MIN_BYTES = 256;

  /** The largest {@code journal-blob-min-bytes} (a record above it is beyond the value limits). */
  static final long MAXIMUM_JOURNAL_BLOB_MIN_BYTES = 64L << 20;

  /** The block cache of {@code block-cache-bytes = 0}: this share of the machine's memory. */
  static final int AUTOMATIC_BLOCK_CACHE_MEMORY_DIVISOR = 8;

  /** The smallest automatic block cache (a machine whose memory is not known gets this). */
  static final long MINIMUM_AUTOMATIC_BLOCK_CACHE_BYTES = 64L << 20;

  public RocksDiskSettings {
    Invariants.check(blockCacheBytes > 0, "block cache of %d bytes", blockCacheBytes);
    Invariants.check(bloomBitsPerKey >= 0 && bloomBitsPerKey <= 64,
        "bloom-bits-per-key %d outside 0..64", bloomBitsPerKey);
    Invariants.check(bloomPrefixBytes >= 3 && bloomPrefixBytes <= 1024,
        "bloom-prefix-bytes %d outside 3..1024", bloomPrefixBytes);
    Invariants.check(journalBlobMinBytes >= 0
        && journalBlobMinBytes <= MAXIMUM_JOURNAL_BLOB_MIN_BYTES,
        "journal-blob-min-bytes %d outside 0..%d", journalBlobMinBytes,
        MAXIMUM_JOURNAL_BLOB_MIN_BYTES);
  }

  /** The defaults of reference.conf on this machine. */
  public static RocksDiskSettings defaults() {
    return new RocksDiskSettings(automaticBlockCacheBytes(physicalMemoryBytes()),
        DEFAULT_BLOOM_BITS_PER_KEY, DEFAULT_BLOOM_PREFIX_BYTES, false,
        DEFAULT_JOURNAL_BLOB_MIN_BYTES);
  }

  /**
   * The settings of {@code troupe.storage.rocksdb}, where a block cache of 0 bytes means the
   * automatic size ({@link #automaticBlockCacheBytes}).
   *
   * @throws IllegalArgumentException naming the setting, for a value out of its range
   */
  public static RocksDiskSettings of(long blockCacheBytes, int bloomBitsPerKey,
      int bloomPrefixBytes, boolean cacheIndexAndFilterBlocks, long journalBlobMinBytes) {
    if (blockCacheBytes < 0) {
      throw new IllegalArgumentException("troupe.storage.rocksdb.block-cache-bytes must be 0"
          + " (automatic) or positive, was " + blockCacheBytes);
    }
    if (bloomBitsPerKey < 0 || bloomBitsPerKey > 64) {
      throw new IllegalArgumentException("troupe.storage.rocksdb.bloom-bits-per-key must be in"
          + " 0..64 (0: no filter on the index and checkpoints), was " + bloomBitsPerKey);
    }
    if (bloomPrefixBytes < 3 || bloomPrefixBytes > 1024) {
      throw new IllegalArgumentException("troupe.storage.rocksdb.bloom-prefix-bytes must be in"
          + " 3..1024, was " + bloomPrefixBytes);
    }
    if (journalBlobMinBytes < 0 || journalBlobMinBytes > MAXIMUM_JOURNAL_BLOB_MIN_BYTES) {
      throw new IllegalArgumentException("troupe.storage.rocksdb.journal-blob-min-bytes must be 0"
          + " (no blob files) or a size up to " + MAXIMUM_JOURNAL_BLOB_MIN_BYTES + " bytes, was "
          + journalBlobMinBytes);
    }
    return new RocksDiskSettings(
        blockCacheBytes == 0 ? automaticBlockCacheBytes(physicalMemoryBytes()) : blockCacheBytes,
        bloomBitsPerKey, bloomPrefixBytes, cacheIndexAndFilterBlocks, journalBlobMinBytes);
  }

  /**
   * The automatic block cache: an eighth of the machine's memory (the Java heap defaults to a
   * quarter, so heap and block cache leave most of it to the operating system's page cache), at
   * least 64 MB.
   *
   * @param physicalMemoryBytes the machine's (or container's) memory, 0 if unknown
   */
  static long automaticBlockCacheBytes(long physicalMemoryBytes) {
    return Math.max(MINIMUM_AUTOMATIC_BLOCK_CACHE_BYTES,
        physicalMemoryBytes / AUTOMATIC_BLOCK_CACHE_MEMORY_DIVISOR);
  }

  /** The machine's memory as the JVM sees it (a container's limit inside one), 0 if unknown. */
  static long physicalMemoryBytes() {
    if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean system) {
      return Math.max(0, system.getTotalMemorySize());
    }
    return 0;
  }

  /** With another block cache capacity (bytes, positive). */
  public RocksDiskSettings withBlockCacheBytes(long value) {
    return new RocksDiskSettings(value, bloomBitsPerKey, bloomPrefixBytes,
        cacheIndexAndFilterBlocks, journalBlobMinBytes);
  }

  /** With other prefix filters on the index and checkpoints (0 bits: none). */
  public RocksDiskSettings withBloom(int bitsPerKey, int prefixBytes) {
    return new RocksDiskSettings(blockCacheBytes, bitsPerKey, prefixBytes,
        cacheIndexAndFilterBlocks, journalBlobMinBytes);
  }

  /** With another journal blob threshold (bytes; 0: no blob files). */
  public RocksDiskSettings withJournalBlobMinBytes(long value) {
    return new RocksDiskSettings(blockCacheBytes, bloomBitsPerKey, bloomPrefixBytes,
        cacheIndexAndFilterBlocks, value);
  }

  /** Whether journal records of {@link #journalBlobMinBytes} or more go to blob files. */
  public boolean journalBlobFiles() {
    return journalBlobMinBytes > 0;
  }

  /** Whether the index and checkpoints carry prefix filters. */
  public boolean prefixFilters() {
    return bloomBitsPerKey > 0;
  }
}
