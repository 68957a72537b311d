package dev.troupe.txn.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.CRC32C;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/**
 * The wire codec's contract: every message round-trips, and damage (a flipped byte, a truncation,
 * an extension, a type or version this build does not read) is refused with a typed error, never
 * decoded into some other message.
 */
class WireCodecProperties {

  @Provide
  Arbitrary<Envelope> envelopes() {
    return WireArbitraries.envelopes();
  }

  @Property(tries = 500)
  void everyMessageRoundTrips(@ForAll("envelopes") Envelope envelope) {
    assertEquals(envelope, WireCodec.decode(WireCodec.encode(envelope)));
  }

  @Property(tries = 300)
  void aFlippedByteIsDetected(@ForAll("envelopes") Envelope envelope,
      @ForAll @IntRange(min = 0, max = 1_000_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] bytes = WireCodec.encode(envelope);
    bytes[where % bytes.length] ^= (byte) mask;
    assertThrows(CorruptFrameException.class, () -> WireCodec.decode(bytes));
  }

  @Property(tries = 300)
  void aTruncatedFrameIsDetected(@ForAll("envelopes") Envelope envelope,
      @ForAll @IntRange(min = 1, max = 1_000_000) int cut) {
    byte[] bytes = WireCodec.encode(envelope);
    byte[] truncated = Arrays.copyOf(bytes, bytes.length - 1 - (cut % bytes.length));
    assertThrows(CorruptFrameException.class, () -> WireCodec.decode(truncated));
  }

  @Property(tries = 300)
  void anExtendedFrameIsDetected(@ForAll("envelopes") Envelope envelope,
      @ForAll @Size(min = 1, max = 16) byte[] extra) {
    byte[] bytes = WireCodec.encode(envelope);
    byte[] extended = Arrays.copyOf(bytes, bytes.length + extra.length);
    System.arraycopy(extra, 0, extended, bytes.length, extra.length);
    assertThrows(CorruptFrameException.class, () -> WireCodec.decode(extended));
  }

  @Property(tries = 100)
  void anUnknownTypeIdIsRefusedAsSuch(@ForAll("envelopes") Envelope envelope,
      @ForAll @IntRange(min = 16, max = 255) int typeId) {
    byte[] bytes = WireCodec.encode(envelope);
    bytes[0] = (byte) typeId;
    CorruptFrameException refused = assertThrows(CorruptFrameException.class,
        () -> WireCodec.decode(resealed(bytes)));
    assertEquals(Damage.UNKNOWN_TYPE, refused.damage());
  }

  @Property(tries = 100)
  void aNewerVersionIsRefusedAsSuch(@ForAll("envelopes") Envelope envelope,
      @ForAll @IntRange(min = 1, max = 126) int above) {
    byte[] bytes = WireCodec.encode(envelope);
    byte newest = WireCodec.VERSIONS[bytes[0]];
    bytes[1] = (byte) (newest + above);
    CorruptFrameException refused = assertThrows(CorruptFrameException.class,
        () -> WireCodec.decode(resealed(bytes)));
    assertEquals(Damage.NEWER_VERSION, refused.damage());
    assertTrue(refused.getMessage().contains("reads up to version " + newest),
        refused.getMessage());
  }

  @Test
  void everyMessageTypeHasItsOwnTypeIdAndVersionOneButIdempotentTurnRequestsAndStatusAnswers() {
    Set<Byte> ids = new HashSet<>();
    for (Class<? extends WireMessage> type : WireArbitraries.messageTypes()) {
      WireMessage example = WireArbitraries.messages().filter(type::isInstance).sample();
      byte id = WireCodec.typeId(example);
      assertTrue(ids.add(id), "type id " + id + " used twice");
      // A turn request with an idempotency record is version 2 (one without is still 1), and so
      // is a node status answer with the member's HTTP URL (one without is still 1).
      assertEquals(example instanceof WireMessage.TurnRequest
          || example instanceof WireMessage.NodeStatusAnswer ? 2 : 1, WireCodec.VERSIONS[id]);
    }
    assertEquals(WireCodec.VERSIONS.length - 1, ids.size());
    assertEquals(WireMessage.class.getPermittedSubclasses().length, ids.size());
  }

  @Test
  void framesShorterThanTheSmallestAreRefused() {
    CorruptFrameException refused = assertThrows(CorruptFrameException.class,
        () -> WireCodec.decode(new byte[9]));
    assertEquals(Damage.TOO_SHORT, refused.damage());
  }

  /** The frame with a valid checksum again, so only the changed header field is wrong. */
  private static byte[] resealed(byte[] bytes) {
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
