package dev.troupe.server.http;

import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.runtime.replication.ReplicationShell;
import dev.troupe.server.replication.ReplicationServerSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The body of {@code GET /v1/replication/stream} (docs/ARCHITECTURE.md, "Replication streams"):
 * one origin's log pushed to a puller as one chunked HTTP answer, batch after batch, each batch
 * one {@link ReplicationCodec} frame (self-delimiting: the puller's {@code FrameSplitter} cuts
 * them back apart whatever the chunking). What the log already holds after the puller's bound
 * goes first, in batches of at most {@code pull-batch-max-entries}; then the log is re-read every
 * {@code long-poll-check-interval-millis} while it has nothing new (on {@link
 * dev.troupe.server.replication.DataCentreReplication#logChecks}'s thread), and a batch leaves as
 * soon as a read finds entries (a commit travels once it is in the log: no round trip between two
 * batches, which is what long polls cost under load). While idle, a heartbeat (an empty batch
 * with a newer bound) leaves every {@code stream-heartbeat-millis}, which advances the origin at
 * the puller and tells it the link lives. After {@code stream-max-millis} the stream ends; the
 * puller reopens it from what it received (and reports its received vector anew).
 *
 * <p><b>Memory.</b> The source is pulled: a batch is read from the log only when the connection
 * asks for the next element (Pekko streams' demand), and the stages here buffer one element, so a
 * slow puller (or a full TCP window) stops the reads instead of queueing batches in this server.
 *
 * <p>Each batch's bound is the next read's {@code after}: every entry up to it was in this stream
 * or before it (the {@link ReplicationBatch} contract), so nothing is skipped or sent twice.
 */
final class ReplicationStream {
  /** The largest chunk of the answer: a quarter of Pekko HTTP's default client limit. */
  static final int CHUNK_BYTES = 256 * 1024;

  private ReplicationStream() {}

  /** Where the stream stands: the bound already sent, and when the last batch left. */
  private record Position(long after, long lastSentNanos) {}

  /**
   * The stream's bytes: {@code first} (read with the puller's report), then the rest as above.
   */
  static Source<ByteString, NotUsed> source(ReplicationShell shell, int originDc,
      long afterTimestamp, ReplicationBatch first, int maxEntries,
      ReplicationServerSettings settings,
      ScheduledExecutorService checks) {
    long startedNanos = System.nanoTime();
    long deadlineNanos = startedNanos + settings.streamMaxMillis() * 1_000_000;
    Reader reader = new Reader(shell, originDc, maxEntries, deadlineNanos,
        settings.streamHeartbeatMillis() * 1_000_000,
        settings.longPollCheckIntervalMillis(), checks);
    // A bound below the puller's (a forwarded origin this DC has less of) must not send it back
    // what it has.
    Position start = new Position(Math.max(afterTimestamp, first.upToTimestamp()), startedNanos);
    return Source.single(encode(first))
        .concat(Source.unfoldAsync(start, reader::next))
        .mapConcat(ReplicationStream::chunks)
        .addAttributes(Attributes.inputBuffer(1, 1));
  }

  private static ByteString encode(ReplicationBatch batch) {
    return ByteString.fromArrayUnsafe(ReplicationCodec.encodeBatch(batch));
  }

  /**
   * A batch's frame in chunks of at most {@link #CHUNK_BYTES} (slices, not copies): an HTTP client
   * refuses chunks above its limit (Pekko HTTP's {@code max-chunk-size}, 1 MiB by default), and a
   * batch of large transactions can be bigger. The puller's frame splitter joins them again.
   */
  static List<ByteString> chunks(ByteString frame) {
    if (frame.size() <= CHUNK_BYTES) {
      return List.of(frame);
    }
    List<ByteString> chunks = new ArrayList<>(frame.size() / CHUNK_BYTES + 1);
    for (int at = 0; at < frame.size(); at += CHUNK_BYTES) {
      chunks.add(frame.slice(at, Math.min(frame.size(), at + CHUNK_BYTES)));
    }
    return chunks;
  }

  /** Produces the next batch when asked: at once if the log has one, else when it has. */
  private record Reader(ReplicationShell shell, int originDc, int maxEntries, long deadlineNanos,
      long heartbeatNanos, long checkIntervalMillis, ScheduledExecutorService checks) {

    CompletionStage<Optional<Pair<Position, ByteString>>> next(Position position) {
      CompletableFuture<Optional<Pair<Position, ByteString>>> next = new CompletableFuture<>();
      check(position, next);
      return next;
    }

    /**
     * Reads the log once: completes {@code next} with a batch that has entries, a heartbeat
     * that is due, or the end past the deadline; otherwise checks again after the interval. A
     * failed read (a failed store) fails the stream: the puller sees a broken answer and backs off.
     */
    private void check(Position position,
        CompletableFuture<Optional<Pair<Position, ByteString>>> next) {
      long nowNanos = System.nanoTime();
      if (nowNanos - deadlineNanos >= 0) {
        next.complete(Optional.empty());
        return;
      }
      try {
        ReplicationBatch batch = shell.serveMore(originDc, position.after(), maxEntries);
        // A heartbeat leaves even when the bound did not move (a forwarded origin nothing new
        // arrived of): it is what tells the puller the link lives.
        boolean heartbeatDue = nowNanos - position.lastSentNanos() >= heartbeatNanos;
        if (!batch.entries().isEmpty() || heartbeatDue) {
          Position sent = new Position(Math.max(position.after(), batch.upToTimestamp()),
              nowNanos);
          next.complete(Optional.of(Pair.create(sent, encode(batch))));
          return;
        }
      } catch (RuntimeException e) {
        next.completeExceptionally(e);
        return;
      }
      try {
        checks.schedule(() -> check(position, next), checkIntervalMillis, TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException closing) {
        next.completeExceptionally(closing);
      }
    }
  }
}
