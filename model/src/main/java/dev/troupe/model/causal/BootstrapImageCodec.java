package dev.troupe.model.causal;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.Frames;
import dev.troupe.model.codec.ValueEncoding;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;

/**
 * The binary form of {@link BootstrapImage} records: a stream of {@link Frames} (type id, version,
 * length, fields, CRC32C), one frame per record, so a reader takes one record at a time from a
 * chunked HTTP body without holding the image. Type ids: 1 {@link BootstrapImage.Began}, 2 {@link
 * BootstrapImage.EntityImage}, 3 {@link BootstrapImage.Ended}.
 *
 * <p><b>Fields.</b> Began: source DC (varint), start vector. EntityImage: entity id, version at the
 * source (8 bytes), the state ({@link ValueEncoding#writeState}: every key's CRDT value with its
 * stamps, per-DC counter entries and set tags, the version and whether it exists). Ended: end
 * vector, entity count (varint). A vector as {@link ReplicationCodec#writeDependencies}.
 *
 * <p>A damaged frame (any byte flipped, cut, a type or version this build does not read, a frame
 * longer than the reader allows) is refused with a {@link CorruptFrameException}. The
 * fixed byte vectors of {@code BootstrapImageCodecTest} fail on any change of the fields that does
 * not take a new version. Thread-safe (stateless).
 */
public final class BootstrapImageCodec {
  static final byte BEGAN = 1;
  static final byte ENTITY_IMAGE = 2;
  static final byte ENDED = 3;

  /** The version this build writes (and the newest it reads) of each type id, by index. */
  static final byte[] VERSIONS = {0, 1, 1, 1};

  private BootstrapImageCodec() {}

  public static byte[] encode(BootstrapImage record) {
    return switch (record) {
      case BootstrapImage.Began began -> {
        BinaryWriter out = Frames.begin(BEGAN, VERSIONS[BEGAN], 32);
        out.varInt(began.sourceDc());
        ReplicationCodec.writeDependencies(out, began.startVector());
        yield Frames.seal(out);
      }
      case BootstrapImage.EntityImage image -> {
        BinaryWriter out = Frames.begin(ENTITY_IMAGE, VERSIONS[ENTITY_IMAGE], 128);
        ValueEncoding.writeEntity(out, image.entity());
        out.fixedLong(image.versionAtSource());
        ValueEncoding.writeState(out, image.state());
        yield Frames.seal(out);
      }
      case BootstrapImage.Ended ended -> {
        BinaryWriter out = Frames.begin(ENDED, VERSIONS[ENDED], 32);
        ReplicationCodec.writeDependencies(out, ended.endVector());
        out.varLong(ended.entityCount());
        yield Frames.seal(out);
      }
    };
  }

  public static BootstrapImage decode(byte[] bytes) {
    byte typeId = Frames.check(bytes, VERSIONS, "bootstrap image", CorruptFrameException::new);
    BinaryReader in = new BinaryReader(bytes, Frames.HEADER_BYTES, Frames.fieldsEnd(bytes),
        (position, message, cause) -> new CorruptFrameException(Damage.MALFORMED,
            "bootstrap image type " + typeId + " at byte " + position + ": " + message, cause));
    try {
      BootstrapImage record = switch (typeId) {
        case BEGAN -> new BootstrapImage.Began(in.varInt(),
            ReplicationCodec.readDependencies(in));
        case ENTITY_IMAGE -> {
          EntityId entity = ValueEncoding.readEntity(in);
          long version = in.fixedLong();
          EntityState state = ValueEncoding.readState(in);
          yield new BootstrapImage.EntityImage(entity, version, state);
        }
        default -> new BootstrapImage.Ended(ReplicationCodec.readDependencies(in), in.varLong());
      };
      in.end();
      return record;
    } catch (CorruptFrameException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new CorruptFrameException(Damage.MALFORMED,
          "bootstrap image type " + typeId + ": " + e.getMessage(), e);
    }
  }

  /**
   * Reads the next record's frame from a stream: null at a clean end (no byte of a next frame),
   * {@link EOFException} for a frame cut short, a {@link CorruptFrameException} ({@code
   * TOO_SHORT}) for one declaring more than {@code maxFrameBytes} (read nothing of it). Blocks
   * on the stream; holds one frame.
   */
  public static BootstrapImage read(InputStream in, int maxFrameBytes) throws IOException {
    byte[] header = new byte[Frames.HEADER_BYTES];
    int first = in.readNBytes(header, 0, header.length);
    if (first == 0) {
      return null;
    }
    if (first < header.length) {
      throw new EOFException("bootstrap image cut inside a frame's header");
    }
    long fields = BinaryReader.intAt(header, 2) & 0xFFFFFFFFL;
    long total = Frames.HEADER_BYTES + fields + Frames.CHECKSUM_BYTES;
    if (total > maxFrameBytes) {
      throw new CorruptFrameException(Damage.LENGTH_MISMATCH,
          "bootstrap image frame of " + total + " bytes, more than the " + maxFrameBytes
              + " allowed");
    }
    byte[] frame = new byte[(int) total];
    System.arraycopy(header, 0, frame, 0, header.length);
    int rest = in.readNBytes(frame, header.length, frame.length - header.length);
    if (rest < frame.length - header.length) {
      throw new EOFException("bootstrap image cut inside a frame");
    }
    return decode(frame);
  }
}
