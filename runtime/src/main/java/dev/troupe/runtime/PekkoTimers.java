package dev.troupe.runtime;

import dev.troupe.txn.port.Timers;
import java.time.Duration;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Scheduler;
import scala.concurrent.ExecutionContext;

/**
 * The runtime's {@link Timers}: one-shot tasks on Pekko's scheduler, run on the actor system's
 * default dispatcher. The shells run their cores' timer effects through it (a coordinator's
 * prepare timeout, retry backoff and decision resends; a participant's in-doubt question; an
 * interactive transaction's idle check).
 *
 * <p><b>Whose thread.</b> The action runs on a dispatcher thread, so each shell's action hands
 * the timer's input to the core the way the shell feeds every other input, which is what the
 * port's contract asks: {@link TransactionRun} and {@link InteractiveShell} feed their cores under
 * their monitors; {@link EntityActor}'s action only tells the actor a message, so the core sees it
 * on the actor's thread. Pekko's scheduler is a hashed wheel with a tick of {@code
 * pekko.scheduler.tick-duration} (10 ms by default): a timer fires no earlier than asked and up to
 * a tick later. Timers live in memory: a crash loses them, and recovery re-arms what they guarded.
 */
public final class PekkoTimers implements Timers {
  private final Scheduler scheduler;
  private final ExecutionContext executor;

  public PekkoTimers(ActorSystem<?> system) {
    this.scheduler = system.scheduler();
    this.executor = system.executionContext();
  }

  @Override
  public Scheduled schedule(long delayMillis, Runnable action) {
    Cancellable task =
        scheduler.scheduleOnce(Duration.ofMillis(Math.max(0, delayMillis)), action, executor);
    return task::cancel;
  }
}
