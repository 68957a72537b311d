package dev.troupe.runtime;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** Helpers for the futures that Pekko hands out. */
public final class Futures {
  private Futures() {}

  /**
   * A plain {@link CompletableFuture} completed, on the thread that completes {@code stage}, with
   * its outcome.
   *
   * <p>Why: the stages Pekko's Java API returns wrap Scala futures in Scala's {@code CF}, whose
   * non-async methods ({@code thenApply}, {@code handle}, ...) run their functions asynchronously
   * on {@code ForkJoinPool.commonPool()}. On a two-core machine that pool has one thread, so every
   * turn's answer and every request body went through a single thread: a hidden serialization
   * point that made writes several milliseconds slower under load (found with JFR while running
   * {@code troupe bench ycsb}). Stages chained on the future returned here run where it completes.
   */
  public static <T> CompletableFuture<T> onCompletingThread(CompletionStage<T> stage) {
    CompletableFuture<T> result = new CompletableFuture<>();
    stage.whenCompleteAsync((value, failure) -> {
      if (failure != null) {
        result.completeExceptionally(failure);
      } else {
        result.complete(value);
      }
    }, Runnable::run);
    return result;
  }
}
