package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.EntityId;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireCodec;
import dev.troupe.txn.wire.WireMessage;
import java.io.NotSerializableException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** What crosses nodes: a wire frame round-trips unchanged; damaged bytes are refused. */
class WireFrameSerializerTest {
  private final WireFrameSerializer serializer = new WireFrameSerializer();

  private static byte[] frameBytes() {
    return WireCodec.encode(new Envelope(2, new Envelope.Destination.ToNode(5),
        new WireMessage.DecisionQuery(123_456_789L, 2, EntityId.parse("Account/alice"))));
  }

  @Test
  void aFrameRoundTripsAndStillDecodes() throws NotSerializableException {
    byte[] bytes = frameBytes();
    WireFrame frame = new WireFrame(bytes);
    String manifest = serializer.manifest(frame);
    Object back = serializer.fromBinary(serializer.toBinary(frame), manifest);
    WireFrame arrived = (WireFrame) back;
    assertArrayEquals(bytes, arrived.bytes());
    assertEquals(WireCodec.decode(bytes), WireCodec.decode(arrived.bytes()));
  }

  @Test
  void theStartOfAPartitionCarriesNoBytes() throws NotSerializableException {
    PartitionHost.StartPartition start = PartitionHost.StartPartition.INSTANCE;
    assertEquals(0, serializer.toBinary(start).length);
    assertSame(start, serializer.fromBinary(new byte[0], serializer.manifest(start)));
  }

  @Test
  void everyDamagedByteIsRefused() {
    byte[] bytes = frameBytes();
    for (int position = 0; position < bytes.length; position++) {
      byte[] damaged = bytes.clone();
      damaged[position] ^= 0x10;
      assertThrows(NotSerializableException.class, () -> serializer.fromBinary(damaged, "F"),
          "byte " + position);
    }
  }

  @Test
  void cutAndExtendedFramesAreRefused() {
    byte[] bytes = frameBytes();
    for (int length = 0; length < bytes.length; length++) {
      byte[] cut = Arrays.copyOf(bytes, length);
      assertThrows(NotSerializableException.class, () -> serializer.fromBinary(cut, "F"));
    }
    byte[] extended = Arrays.copyOf(bytes, bytes.length + 1);
    assertThrows(NotSerializableException.class, () -> serializer.fromBinary(extended, "F"));
  }

  @Test
  void anUnknownManifestIsRefused() {
    assertThrows(NotSerializableException.class,
        () -> serializer.fromBinary(frameBytes(), "Z"));
  }

  @Test
  void itsIdentifierIsOutsidePekkosOwn() {
    assertEquals(WireFrameSerializer.IDENTIFIER, serializer.identifier());
    org.junit.jupiter.api.Assertions.assertTrue(serializer.identifier() > 40);
  }
}
