package dev.troupe.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.function.IntFunction;
import me.tongfei.progressbar.ProgressBar;

/**
 * Loading or preparing data with asynchronous operations, a bounded number in flight (so a
 * benchmark's set-up never queues more than the engine accepts), stepping a progress bar per
 * answer.
 */
final class BoundedSubmission {
  private BoundedSubmission() {}

  /**
   * Runs {@code operation(0)} to {@code operation(count - 1)}, at most {@code maxInFlight} at once,
   * and waits for all of them; a failed one fails the whole (its exception is thrown).
   */
  static void run(int count, int maxInFlight, ProgressBar progress,
      IntFunction<CompletableFuture<?>> operation) throws InterruptedException {
    Semaphore permits = new Semaphore(Math.max(1, maxInFlight));
    List<CompletableFuture<?>> pending = new ArrayList<>();
    for (int index = 0; index < count; index++) {
      permits.acquire();
      pending.add(operation.apply(index).whenComplete((outcome, failure) -> {
        permits.release();
        progress.step();
      }));
    }
    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).join();
  }
}
