package dev.troupe.server.http;

import dev.troupe.runtime.Troupe;
import dev.troupe.storage.IdempotencyRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Stores first attempts' answers in their idempotency records off the request's path: one thread
 * takes whatever answers are waiting and writes them in one batch ({@link
 * Troupe#recordIdempotencyAnswers}, an unsynced write). Why a thread of its own: a RocksDB write,
 * even unsynced, may wait behind a synced group of the partition writers; on the thread that
 * completes a request it delayed every keyed write by about a group commit (bench ycsb --target
 * secured at half the throughput of plain writes), and one writer that batches what queued
 * meanwhile keeps up with any rate of answers.
 *
 * <p>Concurrency: {@link #record} from any thread; the writer thread is a daemon, so it never
 * holds the process up; once the store is closed its writes fail and so do their futures.
 */
final class IdempotencyAnswerRecorder {
  private record Pending(IdempotencyRecord record, CompletableFuture<Void> stored) {}

  private final Troupe troupe;
  /** Most answers written in one batch ({@code troupe.idempotency.max-answers-per-write}). */
  private final int maxAnswersPerWrite;
  private final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>();

  IdempotencyAnswerRecorder(Troupe troupe, int maxAnswersPerWrite) {
    this.troupe = troupe;
    this.maxAnswersPerWrite = maxAnswersPerWrite;
    Thread writer = new Thread(this::writeForever, "troupe-idempotency-answers");
    writer.setDaemon(true);
    writer.start();
  }

  /** Queues {@code record} (with its answer); the future completes once it is written. */
  CompletableFuture<Void> record(IdempotencyRecord record) {
    CompletableFuture<Void> stored = new CompletableFuture<>();
    queue.add(new Pending(record, stored));
    return stored;
  }

  private void writeForever() {
    List<Pending> batch = new ArrayList<>();
    while (true) {
      try {
        batch.add(queue.take());
      } catch (InterruptedException e) {
        return;
      }
      queue.drainTo(batch, maxAnswersPerWrite - 1);
      List<IdempotencyRecord> records = new ArrayList<>(batch.size());
      batch.forEach(pending -> records.add(pending.record()));
      RuntimeException failure = null;
      try {
        troupe.recordIdempotencyAnswers(records);
      } catch (RuntimeException e) {
        failure = e;
      }
      for (Pending pending : batch) {
        if (failure == null) {
          pending.stored().complete(null);
        } else {
          pending.stored().completeExceptionally(failure);
        }
      }
      batch.clear();
    }
  }
}
