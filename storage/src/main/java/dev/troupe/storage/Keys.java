package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.util.Arrays;

/**
 * Key layouts of the column families. Every number is big-endian and unsigned, so RocksDB's bytewise
 * order is numeric order: a partition's journal is contiguous and in sequence order, and one
 * entity's index entries and checkpoints are contiguous and in timestamp order (prefix iteration
 * never touches another entity's keys, which is what keeps materialization independent of unrelated
 * records, antidote-cache.txt §2.3).
 *
 * <ul>
 *   <li>journal: {@code partition u16, sequence u64}
 *   <li>index: {@code entityLength u16, entityBytes, commitTimestamp u64, partition u16, sequence u64}
 *   <li>checkpoints: {@code entityLength u16, entityBytes, timestamp u64}
 *   <li>meta: a tag byte then tag-specific fields (see the constants: every tag is declared here,
 *       one byte each and each distinct, so that no meta key is a prefix of another tag's;
 *       {@link #META_TAGS} lists them and {@code KeysTest} holds them to it)
 *   <li>listing: {@code UTF-8 type, 0x00, UTF-8 id} ({@link ListingIndex})
 *   <li>transactions: {@code 'P', partition u16, transactionId u64, entityPrefix} for a prepared
 *       transaction's part, {@code 'D', transactionId u64} for a commit decision, {@code 'I',
 *       qualifiedKey UTF-8} for an idempotency record ({@link IdempotencyRecord})
 *   <li>replication: {@code originDc u32, timestamp u64, transactionId u64, index u32} (every
 *       field non-negative, so byte order is (origin, timestamp, transaction, index) order)
 * </ul>
 *
 * <p>The entity prefix starts with the length, so no entity's prefix is a prefix of another's.
 */
final class Keys {
  static final int MAX_ENTITY_BYTES = 0xFFFF;
  static final byte[] EMPTY = new byte[0];

  /** meta: the partition count the database was created with (it fixes entity placement). */
  static final byte[] META_PARTITIONS = {'P'};

  /**
   * meta: the clock ceiling, a timestamp above every timestamp the store has issued (a position
   * whose timestamp is the ceiling), so that a restart never issues one again.
   */
  static final byte[] META_CLOCK_CEILING = {'C'};

  /**
   * meta: {@code 'C', nodeId u8}: the clock ceiling of one node of several sharing the disk
   * ({@link PartitionOwnership#ACQUIRED}), as {@link #META_CLOCK_CEILING} is a single node's: each
   * node bounds only the timestamps it issues itself, so the nodes' ceilings never overwrite one
   * another.
   */
  static byte[] metaClockCeiling(int nodeId) {
    return new byte[] {META_CLOCK_CEILING[0], (byte) nodeId};
  }

  /** meta: {@code 'V', originDc u32}: the received entry of an origin (replication log). */
  static final byte META_RECEIVED = 'V';
  /** meta: {@code 'A', dc u32}: an entry of the recorded applied vector (replication log). */
  static final byte META_APPLIED = 'A';

  /**
   * meta: {@code 'G', transactionId u64}: a local decision whose replication log entry names a PSAC
   * part (a position whose timestamp is the decision's), kept until the log is truncated past it.
   */
  static final byte META_LOGGED_DECISION = 'G';

  /**
   * meta: the delivered watermark of causal messages (a position whose timestamp is the
   * watermark): every message of the local log at or below it is delivered.
   */
  static final byte[] META_DELIVERED = {'D'};

  /**
   * meta: {@code 'T', originDc u32}: the highest timestamp of an entry of that origin the
   * replication log truncated (a position {@code (originDc, timestamp)}), written in the
   * truncation's own batch: a pull after a lower timestamp is refused as {@code truncated}.
   */
  static final byte META_TRUNCATED = 'T';

  /** meta: the peers added at runtime ({@link Codec#encodePeers}, {@code POST /v1/replication/peers}). */
  static final byte[] META_PEERS = {'N'};

  /**
   * meta: {@code 'M', originDc u32}: the delivered watermark of another origin's causal messages
   * (those to receivers homed here), a position as {@link #META_APPLIED}'s entries.
   */
  static final byte META_DELIVERED_REMOTE = 'M';

  /**
   * meta: {@code 'K', partition u16}: how many local entries the partition has added to the
   * replication log (a position whose sequence is the count), written in the batch that adds them.
   */
  static final byte META_LOGGED_ENTRIES = 'K';

  /**
   * meta: how many entries receiving has stored in the replication log, plus the entries counted
   * once when a log from before the count was first opened (a position whose sequence is it).
   */
  static final byte[] META_RECEIVED_ENTRIES = {'E'};

  /** meta: how many entries truncations deleted from the replication log (likewise). */
  static final byte[] META_TRUNCATED_ENTRIES = {'X'};

  /**
   * meta: the progress of installing a bootstrap image ({@link BootstrapInstallation}), kept until
   * the node serves.
   */
  static final byte[] META_BOOTSTRAP = {'B'};

  /**
   * meta: the listing index is complete for every entity stored ({@link ListingIndex}: a position
   * whose sequence is the listing key format). Written with a new store's first batch, or once by
   * the build of a store written before the listing index.
   */
  static final byte[] META_LISTING_BUILT = {'S'};

  private static final byte META_LAST_ROUND = 'R';
  private static final byte META_HORIZON = 'H';
  private static final byte META_ROUND_LIST = 'L';

  /**
   * The first byte of every meta key, one per kind of record: a new kind takes a byte not here
   * (two kinds sharing one would read each other's records, as the listing index's first marker
   * did the bootstrap progress's).
   */
  static final byte[] META_TAGS = {META_PARTITIONS[0], META_CLOCK_CEILING[0], META_RECEIVED,
      META_APPLIED, META_LOGGED_DECISION, META_DELIVERED[0], META_TRUNCATED, META_PEERS[0],
      META_DELIVERED_REMOTE, META_LOGGED_ENTRIES, META_RECEIVED_ENTRIES[0],
      META_TRUNCATED_ENTRIES[0], META_LAST_ROUND, META_HORIZON, META_ROUND_LIST,
      META_BOOTSTRAP[0], META_LISTING_BUILT[0]};

  private Keys() {}

  static final byte PREPARED_TAG = 'P';
  static final byte DECIDED_TAG = 'D';
  static final byte IDEMPOTENCY_TAG = 'I';

  static byte[] idempotency(String qualifiedKey) {
    byte[] text = qualifiedKey.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] key = new byte[1 + text.length];
    key[0] = IDEMPOTENCY_TAG;
    System.arraycopy(text, 0, key, 1, text.length);
    return key;
  }

  static byte[] prepared(int partition, long transactionId, byte[] entityPrefix) {
    byte[] key = new byte[11 + entityPrefix.length];
    key[0] = PREPARED_TAG;
    putShort(key, 1, partition);
    putLong(key, 3, transactionId);
    System.arraycopy(entityPrefix, 0, key, 11, entityPrefix.length);
    return key;
  }

  static byte[] decided(long transactionId) {
    byte[] key = new byte[9];
    key[0] = DECIDED_TAG;
    putLong(key, 1, transactionId);
    return key;
  }

  static byte[] replication(int originDc, long timestamp, long transactionId, int index) {
    byte[] key = new byte[24];
    putInt(key, 0, originDc);
    putLong(key, 4, timestamp);
    putLong(key, 12, transactionId);
    putInt(key, 20, index);
    return key;
  }

  static int replicationOrigin(byte[] key) {
    return getInt(key, 0);
  }

  static long replicationTimestamp(byte[] key) {
    return getLong(key, 4);
  }

  /** meta key {@code tag, dc u32} (received or applied vector entry). */
  static byte[] metaVectorEntry(byte tag, int dataCentre) {
    byte[] key = new byte[5];
    key[0] = tag;
    putInt(key, 1, dataCentre);
    return key;
  }

  static byte[] metaLoggedDecision(long transactionId) {
    byte[] key = new byte[9];
    key[0] = META_LOGGED_DECISION;
    putLong(key, 1, transactionId);
    return key;
  }

  static void putInt(byte[] target, int offset, int value) {
    target[offset] = (byte) (value >>> 24);
    target[offset + 1] = (byte) (value >>> 16);
    target[offset + 2] = (byte) (value >>> 8);
    target[offset + 3] = (byte) value;
  }

  static int getInt(byte[] source, int offset) {
    return ((source[offset] & 0xFF) << 24) | ((source[offset + 1] & 0xFF) << 16)
        | ((source[offset + 2] & 0xFF) << 8) | (source[offset + 3] & 0xFF);
  }

  static byte[] journal(int partition, long sequence) {
    byte[] key = new byte[10];
    putShort(key, 0, partition);
    putLong(key, 2, sequence);
    return key;
  }

  static int journalPartition(byte[] key) {
    return ((key[0] & 0xFF) << 8) | (key[1] & 0xFF);
  }

  static long journalSequence(byte[] key) {
    return getLong(key, 2);
  }

  /** The entity prefix of index and checkpoint keys: {@code length u16, bytes}. */
  static byte[] entityPrefix(EntityId entity) {
    byte[] bytes = entity.toBytes();
    if (bytes.length > MAX_ENTITY_BYTES) {
      throw new TroupeException(
          ErrorCode.TOO_LARGE, "entity reference longer than " + MAX_ENTITY_BYTES + " bytes");
    }
    byte[] prefix = new byte[2 + bytes.length];
    putShort(prefix, 0, bytes.length);
    System.arraycopy(bytes, 0, prefix, 2, bytes.length);
    return prefix;
  }

  /**
   * A key above every index and checkpoint key of the entity with {@code prefix} and below every
   * other entity's: such keys continue the prefix with a non-negative big-endian timestamp, whose
   * first byte is at most 0x7F, and no other entity's prefix starts with this one (the prefix
   * begins with its length).
   */
  static byte[] entityUpperBound(byte[] prefix) {
    byte[] bound = Arrays.copyOf(prefix, prefix.length + 1);
    bound[prefix.length] = (byte) 0x80;
    return bound;
  }

  static byte[] index(byte[] prefix, long commitTimestamp, int partition, long sequence) {
    byte[] key = Arrays.copyOf(prefix, prefix.length + 18);
    putLong(key, prefix.length, commitTimestamp);
    putShort(key, prefix.length + 8, partition);
    putLong(key, prefix.length + 10, sequence);
    return key;
  }

  /** The index entry's commit timestamp (the key must start with {@code prefix}). */
  static long indexTimestamp(byte[] key, int prefixLength) {
    return getLong(key, prefixLength);
  }

  /** The journal key an index entry points to. */
  static byte[] indexJournalKey(byte[] key, int prefixLength) {
    return Arrays.copyOfRange(key, prefixLength + 8, prefixLength + 18);
  }

  static byte[] checkpoint(byte[] prefix, long timestamp) {
    byte[] key = Arrays.copyOf(prefix, prefix.length + 8);
    putLong(key, prefix.length, timestamp);
    return key;
  }

  static long checkpointTimestamp(byte[] key) {
    return getLong(key, key.length - 8);
  }

  /** Whether {@code key} belongs to the entity of {@code prefix} with {@code suffix} more bytes. */
  static boolean hasPrefix(byte[] key, byte[] prefix, int suffix) {
    return key.length == prefix.length + suffix
        && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }

  static byte[] metaLoggedEntries(int partition) {
    return new byte[] {META_LOGGED_ENTRIES, (byte) (partition >>> 8), (byte) partition};
  }

  static byte[] metaLastRound(int partition) {
    return new byte[] {META_LAST_ROUND, (byte) (partition >>> 8), (byte) partition};
  }

  static byte[] metaHorizon(int partition) {
    return new byte[] {META_HORIZON, (byte) (partition >>> 8), (byte) partition};
  }

  /** Prefix of the completed rounds of a partition still above its horizon. */
  static byte[] metaRoundListPrefix(int partition) {
    return new byte[] {META_ROUND_LIST, (byte) (partition >>> 8), (byte) partition};
  }

  static byte[] metaRound(int partition, long sequence) {
    byte[] key = Arrays.copyOf(metaRoundListPrefix(partition), 11);
    putLong(key, 3, sequence);
    return key;
  }

  /** The partition of an entity: {@link EntityLocator#partitionOf(EntityId, int)}. */
  static int partitionOf(EntityId entity, int partitions) {
    return EntityLocator.partitionOf(entity, partitions);
  }

  static int murmur3(byte[] data, int seed) {
    return EntityLocator.murmur3(data, seed);
  }

  static void putShort(byte[] target, int offset, int value) {
    target[offset] = (byte) (value >>> 8);
    target[offset + 1] = (byte) value;
  }

  static void putLong(byte[] target, int offset, long value) {
    for (int i = 0; i < 8; i++) {
      target[offset + i] = (byte) (value >>> (56 - 8 * i));
    }
  }

  static long getLong(byte[] source, int offset) {
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (source[offset + i] & 0xFF);
    }
    return value;
  }
}
