package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.server.replication.FrameSplitter;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * A batch larger than an HTTP client's chunk limit leaves a replication stream in slices of at
 * most {@link ReplicationStream#CHUNK_BYTES}, which the puller's splitter joins into the frame.
 */
class ReplicationStreamChunksTest {
  @Test
  void aLargeBatchLeavesInChunksTheSplitterJoins() {
    List<ReplicationEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 3_000; i++) {
      entries.add(new ReplicationEntry.Part(7, i, i, 0, new EntityId("Note", "n" + i),
          List.of(new Operation.Increment("count-with-a-long-key-" + "k".repeat(200), i)),
          DependencyVector.EMPTY));
    }
    ReplicationBatch batch = new ReplicationBatch(7, entries, 3_000);
    byte[] frame = ReplicationCodec.encodeBatch(batch);
    assertTrue(frame.length > 2 * ReplicationStream.CHUNK_BYTES, "a large frame: " + frame.length);
    List<ByteString> chunks = ReplicationStream.chunks(ByteString.fromArray(frame));
    assertTrue(chunks.size() >= 3);
    FrameSplitter splitter = new FrameSplitter(frame.length);
    List<byte[]> joined = new ArrayList<>();
    for (ByteString chunk : chunks) {
      assertTrue(chunk.size() <= ReplicationStream.CHUNK_BYTES);
      joined.addAll(splitter.offer(chunk.toArray()));
    }
    splitter.finish();
    assertEquals(1, joined.size());
    assertArrayEquals(frame, joined.getFirst());
    assertEquals(List.of(ByteString.fromArray(new byte[] {1, 2})),
        ReplicationStream.chunks(ByteString.fromArray(new byte[] {1, 2})));
  }
}
