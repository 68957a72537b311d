package dev.troupe.model.causal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import java.util.Arrays;
import java.util.zip.CRC32C;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The replication codec's contract: every entry and batch round-trips, and damage (a flipped byte,
 * a truncation, an extension, a type or version this build does not read) is refused with a typed
 * error, never decoded into some other entry.
 */
class ReplicationCodecProperties {

  @Provide
  Arbitrary<ReplicationEntry> entries() {
    return ReplicationArbitraries.entries();
  }

  @Provide
  Arbitrary<ReplicationBatch> batches() {
    return ReplicationArbitraries.batches();
  }

  @Property(tries = 500)
  void everyEntryRoundTrips(@ForAll("entries") ReplicationEntry entry) {
    assertEquals(entry, ReplicationCodec.decodeEntry(ReplicationCodec.encodeEntry(entry)));
  }

  @Property(tries = 300)
  void everyBatchRoundTrips(@ForAll("batches") ReplicationBatch batch) {
    assertEquals(batch, ReplicationCodec.decodeBatch(ReplicationCodec.encodeBatch(batch)));
  }

  @Property(tries = 300)
  void aFlippedByteOfAnEntryIsDetected(@ForAll("entries") ReplicationEntry entry,
      @ForAll @IntRange(min = 0, max = 1_000_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] bytes = ReplicationCodec.encodeEntry(entry);
    bytes[where % bytes.length] ^= (byte) mask;
    assertThrows(CorruptFrameException.class, () -> ReplicationCodec.decodeEntry(bytes));
  }

  @Property(tries = 300)
  void aFlippedByteOfABatchIsDetected(@ForAll("batches") ReplicationBatch batch,
      @ForAll @IntRange(min = 0, max = 1_000_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] bytes = ReplicationCodec.encodeBatch(batch);
    bytes[where % bytes.length] ^= (byte) mask;
    assertThrows(CorruptFrameException.class, () -> ReplicationCodec.decodeBatch(bytes));
  }

  @Property(tries = 300)
  void aTruncationIsDetected(@ForAll("batches") ReplicationBatch batch,
      @ForAll("entries") ReplicationEntry entry,
      @ForAll @IntRange(min = 1, max = 1_000_000) int cut) {
    byte[] batchBytes = ReplicationCodec.encodeBatch(batch);
    byte[] shortBatch = Arrays.copyOf(batchBytes, batchBytes.length - 1 - (cut % batchBytes.length));
    assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeBatch(shortBatch));
    byte[] entryBytes = ReplicationCodec.encodeEntry(entry);
    byte[] shortEntry = Arrays.copyOf(entryBytes, entryBytes.length - 1 - (cut % entryBytes.length));
    assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(shortEntry));
  }

  @Property(tries = 200)
  void anExtensionIsDetected(@ForAll("entries") ReplicationEntry entry,
      @ForAll @Size(min = 1, max = 16) byte[] extra) {
    byte[] bytes = ReplicationCodec.encodeEntry(entry);
    byte[] extended = Arrays.copyOf(bytes, bytes.length + extra.length);
    System.arraycopy(extra, 0, extended, bytes.length, extra.length);
    assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(extended));
  }

  @Property(tries = 100)
  void anUnknownTypeOrNewerVersionIsRefusedAsSuch(@ForAll("entries") ReplicationEntry entry,
      @ForAll @IntRange(min = 4, max = 255) int typeId,
      @ForAll @IntRange(min = 2, max = 127) int version) {
    byte[] unknownType = ReplicationCodec.encodeEntry(entry);
    unknownType[0] = (byte) typeId;
    assertEquals(Damage.UNKNOWN_TYPE, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(resealed(unknownType))).damage());
    byte[] newer = ReplicationCodec.encodeEntry(entry);
    newer[1] = (byte) version;
    assertEquals(Damage.NEWER_VERSION, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(resealed(newer))).damage());
  }

  @Property(tries = 100)
  void anEntryIsNotReadAsABatchNorABatchAsAnEntry(@ForAll("entries") ReplicationEntry entry,
      @ForAll("batches") ReplicationBatch batch) {
    assertEquals(Damage.UNKNOWN_TYPE, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeBatch(ReplicationCodec.encodeEntry(entry))).damage());
    assertEquals(Damage.UNKNOWN_TYPE, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(ReplicationCodec.encodeBatch(batch))).damage());
  }

  /** The frame with a valid checksum again, so only the changed header field is wrong. */
  static byte[] resealed(byte[] bytes) {
    int limit = bytes.length - 4;
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, limit);
    int value = (int) crc.getValue();
    for (int i = 0; i < 4; i++) {
      bytes[limit + i] = (byte) (value >>> (24 - 8 * i));
    }
    return bytes;
  }
}
