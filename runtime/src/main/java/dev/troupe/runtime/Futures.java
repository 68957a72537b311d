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
  /**
   * Waits for {@code future} and returns its value; a failure is rethrown as the exception it
   * failed with (unwrapped from {@link java.util.concurrent.CompletionException}) when that is
   * unchecked. For threads that may block (the types thread, start-up), never actor threads.
   */
  public static <T> T join(CompletableFuture<T> future) {
    try {
      return future.join();
    } catch (java.util.concurrent.CompletionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      throw e;
    }
  }

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
