package dev.troupe.server.replication;

import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.Frames;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Cuts a replication stream's bytes ({@code GET /v1/replication/stream}: {@link Frames} one after
 * another, in chunks of any size) back into whole frames. A frame's header says how long it is, so
 * a frame may span any number of chunks and a chunk may carry any number of frames; the splitter
 * keeps the bytes of an incomplete frame until the rest arrives. It checks only the envelope's
 * length (the checksum, type and fields are the codec's, which refuses a damaged frame): a length
 * above {@code maxFrameBytes} is refused at once, before anything is buffered for it, so a damaged
 * length cannot make the puller hold gigabytes. {@link #finish} refuses a stream that ended inside
 * a frame (truncated).
 *
 * <p>Not thread-safe: one stream's stage owns it.
 */
public final class FrameSplitter {
  private final long maxFrameBytes;
  /** The bytes received and not yet cut into a frame: {@code pending[0..length)}. */
  private byte[] pending = new byte[0];
  private int length;

  /** A stream whose bytes are not frames of an acceptable length. */
  public static final class BadStream extends RuntimeException {
    BadStream(String message) {
      super(message, null, false, false);
    }
  }

  /** @param maxFrameBytes the longest frame accepted, envelope included */
  public FrameSplitter(long maxFrameBytes) {
    if (maxFrameBytes < Frames.HEADER_BYTES + Frames.CHECKSUM_BYTES) {
      throw new IllegalArgumentException("a frame takes at least "
          + (Frames.HEADER_BYTES + Frames.CHECKSUM_BYTES) + " bytes, not " + maxFrameBytes);
    }
    this.maxFrameBytes = maxFrameBytes;
  }

  /**
   * Takes the next chunk; answers the frames it completed, in order (often none or one).
   *
   * @throws BadStream when a frame declares a length above the limit
   */
  public List<byte[]> offer(byte[] chunk) {
    append(chunk);
    List<byte[]> frames = new ArrayList<>(1);
    int start = 0;
    while (length - start >= Frames.HEADER_BYTES) {
      long fields = BinaryReader.intAt(pending, start + 2) & 0xFFFFFFFFL;
      long frameBytes = Frames.HEADER_BYTES + fields + Frames.CHECKSUM_BYTES;
      if (frameBytes > maxFrameBytes) {
        throw new BadStream("a replication stream's frame declares " + frameBytes
            + " bytes, more than the " + maxFrameBytes + " accepted"
            + " (troupe.replication.pull-max-answer-bytes)");
      }
      if (length - start < frameBytes) {
        break;
      }
      frames.add(Arrays.copyOfRange(pending, start, start + (int) frameBytes));
      start += (int) frameBytes;
    }
    if (start > 0) {
      System.arraycopy(pending, start, pending, 0, length - start);
      length -= start;
    }
    return frames;
  }

  /** The bytes of an incomplete frame held. */
  public int pendingBytes() {
    return length;
  }

  /**
   * The stream ended: refuses it if it ended inside a frame.
   *
   * @throws BadStream when bytes of an incomplete frame are held
   */
  public void finish() {
    if (length > 0) {
      throw new BadStream("the replication stream ended inside a frame (" + length
          + " bytes of it received): truncated");
    }
  }

  private void append(byte[] chunk) {
    if (length + chunk.length > pending.length) {
      pending = Arrays.copyOf(pending, Math.max(length + chunk.length, pending.length * 2));
    }
    System.arraycopy(chunk, 0, pending, length, chunk.length);
    length += chunk.length;
  }
}
