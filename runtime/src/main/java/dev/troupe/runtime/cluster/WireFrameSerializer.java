package dev.troupe.runtime.cluster;

import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.Frames;
import java.io.NotSerializableException;
import java.util.Arrays;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * Pekko's serializer for what the nodes of a cluster send each other ({@link WireFrame}, and the
 * empty {@link PartitionHost.StartPartition} of the boot's start-all pass), registered in runtime's
 * reference.conf ({@code pekko.actor.serialization-bindings}). A frame's bytes go on the wire as
 * they are: they are already a {@code WireCodec} frame with its own type id, version and CRC32C.
 *
 * <p><b>Damaged bytes are refused</b> on arrival: the frame's length and checksum are checked
 * here ({@link Frames#check}, cheap), so a frame damaged in transit fails deserialization, which
 * Artery logs and drops; the cores tolerate a lost message. Its type id and version are checked
 * by {@code WireCodec} when the receiving node decodes it.
 *
 * <p><b>Identifier {@value #IDENTIFIER}.</b> Pekko reserves 0..40; every member must give this
 * serializer the same identifier, and it must never be reused for another format (Artery puts it
 * in front of every message it carries). Manifests: {@code "F"} a wire frame, {@code "S"} the
 * start of a partition (no bytes).
 */
public final class WireFrameSerializer extends SerializerWithStringManifest {
  /** This serializer's identifier on the wire (see the class comment). */
  public static final int IDENTIFIER = 1818;

  private static final String FRAME_MANIFEST = "F";
  private static final String START_MANIFEST = "S";
  private static final byte[] NO_BYTES = new byte[0];
  /**
   * For the length and checksum check only: every type id and version passes here (WireCodec
   * checks them when the envelope is decoded).
   */
  private static final byte[] ANY_VERSION = new byte[128];

  static {
    Arrays.fill(ANY_VERSION, Byte.MAX_VALUE);
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object message) {
    return switch (message) {
      case WireFrame ignored -> FRAME_MANIFEST;
      case PartitionHost.StartPartition ignored -> START_MANIFEST;
      default -> throw new IllegalArgumentException(
          "WireFrameSerializer cannot serialize a " + message.getClass().getName());
    };
  }

  @Override
  public byte[] toBinary(Object message) {
    return switch (message) {
      case WireFrame frame -> frame.bytes();
      case PartitionHost.StartPartition ignored -> NO_BYTES;
      default -> throw new IllegalArgumentException(
          "WireFrameSerializer cannot serialize a " + message.getClass().getName());
    };
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    switch (manifest) {
      case FRAME_MANIFEST -> {
        try {
          Frames.check(bytes, ANY_VERSION, "cluster message", CorruptFrameException::new);
        } catch (CorruptFrameException damaged) {
          throw new NotSerializableException("damaged wire frame: " + damaged.getMessage());
        }
        return new WireFrame(bytes);
      }
      case START_MANIFEST -> {
        return PartitionHost.StartPartition.INSTANCE;
      }
      default -> throw new NotSerializableException(
          "unknown manifest '" + manifest + "' (from a newer node?)");
    }
  }
}
