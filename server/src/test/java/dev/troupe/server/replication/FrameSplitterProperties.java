package dev.troupe.server.replication;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.codec.CorruptFrameException;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * {@link FrameSplitter}: whatever the chunking of a replication stream's bytes (a frame across
 * any number of chunks, many frames in one), the frames come back whole and in order; a stream
 * cut inside a frame is refused at its end; a frame damaged in one byte is refused (by the
 * splitter when the byte is in its length, by the codec otherwise), never read as another batch.
 */
class FrameSplitterProperties {
  private static final int ORIGIN = 7;

  /** Batches of 0..3 entries (heartbeats among them), in increasing timestamps. */
  @Provide
  Arbitrary<List<ReplicationBatch>> batches() {
    return Arbitraries.integers().between(0, 3).list().ofMinSize(1).ofMaxSize(8).map(sizes -> {
      List<ReplicationBatch> batches = new ArrayList<>();
      long timestamp = 1;
      for (int size : sizes) {
        List<ReplicationEntry> entries = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          timestamp++;
          entries.add(new ReplicationEntry.Part(ORIGIN, timestamp, timestamp, 0,
              new EntityId("Note", "n" + timestamp),
              List.of(new Operation.Increment("count", timestamp)), DependencyVector.EMPTY));
        }
        timestamp++;
        batches.add(new ReplicationBatch(ORIGIN, entries, timestamp));
      }
      return batches;
    });
  }

  private static byte[] concatenated(List<byte[]> frames) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    frames.forEach(out::writeBytes);
    return out.toByteArray();
  }

  private static List<byte[]> encoded(List<ReplicationBatch> batches) {
    return batches.stream().map(ReplicationCodec::encodeBatch).toList();
  }

  /** {@code bytes} cut at the given sizes (cycled), the last chunk what is left. */
  private static List<byte[]> chunked(byte[] bytes, List<Integer> sizes) {
    List<byte[]> chunks = new ArrayList<>();
    int at = 0;
    for (int i = 0; at < bytes.length; i++) {
      int size = Math.min(sizes.get(i % sizes.size()), bytes.length - at);
      chunks.add(Arrays.copyOfRange(bytes, at, at + size));
      at += size;
    }
    return chunks;
  }

  @Property
  void framesComeBackWholeAndInOrderWhateverTheChunking(
      @ForAll("batches") List<ReplicationBatch> batches,
      @ForAll @Size(min = 1, max = 5) List<@IntRange(min = 0, max = 40) Integer> chunkSizes) {
    List<byte[]> frames = encoded(batches);
    // Empty chunks happen (a chunk boundary on a frame boundary); sizes of 0 alone would loop.
    List<Integer> sizes = chunkSizes.stream().allMatch(size -> size == 0)
        ? List.of(1) : chunkSizes;
    FrameSplitter splitter = new FrameSplitter(1 << 20);
    List<byte[]> split = new ArrayList<>();
    for (byte[] chunk : chunked(concatenated(frames), sizes)) {
      split.addAll(splitter.offer(chunk));
    }
    splitter.offer(new byte[0]);
    splitter.finish();
    assertEquals(frames.size(), split.size());
    for (int i = 0; i < frames.size(); i++) {
      assertArrayEquals(frames.get(i), split.get(i));
      assertEquals(batches.get(i), ReplicationCodec.decodeBatch(split.get(i)));
    }
  }

  @Property
  void aStreamCutInsideAFrameIsRefusedAtItsEnd(
      @ForAll("batches") List<ReplicationBatch> batches, @ForAll @IntRange(min = 1) int cut) {
    byte[] bytes = concatenated(encoded(batches));
    int keep = bytes.length - 1 - (cut % bytes.length); // 0 .. length-1 bytes: cut somewhere
    byte[] truncated = Arrays.copyOf(bytes, keep);
    FrameSplitter splitter = new FrameSplitter(1 << 20);
    List<byte[]> split = splitter.offer(truncated);
    // Every frame before the cut comes whole; the cut one is held, then refused.
    int whole = 0;
    int at = 0;
    for (byte[] frame : encoded(batches)) {
      if (at + frame.length > keep) {
        break;
      }
      at += frame.length;
      whole++;
    }
    assertEquals(whole, split.size());
    if (keep == at) {
      splitter.finish(); // cut on a frame boundary: a shorter, whole stream
    } else {
      assertThrows(FrameSplitter.BadStream.class, splitter::finish);
    }
  }

  @Property
  void aFrameDamagedInOneByteIsRefused(@ForAll("batches") List<ReplicationBatch> batches,
      @ForAll @IntRange(min = 0) int position, @ForAll @IntRange(min = 1, max = 255) int flip) {
    byte[] bytes = concatenated(encoded(batches));
    int damaged = position % bytes.length;
    bytes[damaged] ^= (byte) flip;
    FrameSplitter splitter = new FrameSplitter(1 << 20);
    // A damaged length may be refused by the splitter, make a frame that the codec refuses, or
    // leave the stream cut at its end; a damaged other byte fails the frame's checksum. No
    // sequence of decoded batches may equal the original.
    boolean refused = false;
    List<ReplicationBatch> decoded = new ArrayList<>();
    try {
      for (byte[] frame : splitter.offer(bytes)) {
        decoded.add(ReplicationCodec.decodeBatch(frame));
      }
      splitter.finish();
    } catch (FrameSplitter.BadStream | CorruptFrameException expected) {
      refused = true;
    }
    assertEquals(true, refused, "a damaged stream decoded as " + decoded);
  }

  @Property(tries = 50)
  void aLengthAboveTheLimitIsRefusedBeforeItIsBuffered(
      @ForAll("batches") List<ReplicationBatch> batches) {
    byte[] first = encoded(batches).getFirst();
    FrameSplitter splitter = new FrameSplitter(first.length - 1);
    assertThrows(FrameSplitter.BadStream.class,
        () -> splitter.offer(Arrays.copyOf(first, 6)));
  }
}
