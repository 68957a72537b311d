package dev.troupe.runtime.messages;

import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.replication.DeliveryCore;
import dev.troupe.replication.DeliveryCore.Effect;
import dev.troupe.replication.DeliveryCore.Input;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.ReplicationLog;
import dev.troupe.txn.Turn;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime shell of {@link DeliveryCore}: delivers the causal messages of this node's own
 * replication log (docs/ARCHITECTURE.md, "Causal messages"). {@link Troupe} starts it when it
 * opens, on every node, named data centre or not.
 *
 * <p>Thin: every input is fed to the core on the shell's one thread (so the core needs no lock),
 * and the effects run there: a {@code Read} reads the local origin of the store's {@link
 * ReplicationLog} (up to its safe timestamp) and feeds the batch back; a {@code Deliver} runs
 * {@link Troupe#deliverMessage} and feeds its completion back when it comes; a {@code
 * RecordWatermark} records the watermark (a synced write on this thread) and, when no peer
 * replicates this DC's log (an unnamed DC), truncates the local log up to it; with peers the
 * replication shell truncates it, never above the recorded watermark. The core is ticked every
 * {@code poll-interval-millis}.
 *
 * <p><b>Recovery.</b> The core starts from the recorded watermark; messages delivered after it are
 * emitted again and the receivers' delivered markers make them no-ops (counted as such, not as
 * deliveries).
 */
public final class MessageDelivery implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MessageDelivery.class);

  private final Troupe troupe;
  private final ReplicationLog replicationLog;
  private final int dataCentreId;
  private final boolean truncatesLocalLog;
  private final DeliveryCore core;
  private final ScheduledExecutorService executor;
  private final Queue<Input> inputs = new ArrayDeque<>();
  private final LongAdder delivered = new LongAdder();
  private final LongAdder redelivered = new LongAdder();
  private final Map<String, LongAdder> failed = new ConcurrentHashMap<>();
  private volatile boolean closed;

  private MessageDelivery(Troupe troupe, MessageSettings settings) {
    this.troupe = troupe;
    this.replicationLog = troupe.store().replicationLog();
    this.dataCentreId = troupe.settings().storage().dataCentreId();
    this.truncatesLocalLog = !troupe.settings().replication().enabled();
    this.core = new DeliveryCore(dataCentreId, replicationLog.deliveredWatermark(),
        settings.limits());
    this.executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
      Thread thread = new Thread(runnable, "troupe-message-delivery");
      thread.setDaemon(true);
      return thread;
    });
  }

  /** Starts delivering from the recorded watermark. */
  public static MessageDelivery start(Troupe troupe, MessageSettings settings) {
    MessageDelivery delivery = new MessageDelivery(troupe, settings);
    delivery.feed(new Input.Started());
    delivery.executor.scheduleWithFixedDelay(() -> delivery.handle(new Input.Tick()),
        settings.pollIntervalMillis(), settings.pollIntervalMillis(), TimeUnit.MILLISECONDS);
    return delivery;
  }

  /** Messages whose receiving action ran. */
  public long deliveredCount() {
    return delivered.sum();
  }

  /** Deliveries found already done by the receiver's marker (after a restart): no-ops. */
  public long redeliveredCount() {
    return redelivered.sum();
  }

  /** Messages consumed without effect, by reason (the error code that stopped the action). */
  public Map<String, Long> failedCounts() {
    Map<String, Long> counts = new TreeMap<>();
    failed.forEach((reason, count) -> counts.put(reason, count.sum()));
    return counts;
  }

  /** Messages read and not yet delivered (a gauge). */
  public int pendingMessages() {
    return pending;
  }

  private volatile int pending;

  /** The delivered watermark as last recorded. */
  public long recordedWatermark() {
    return replicationLog.deliveredWatermark();
  }

  private void feed(Input input) {
    try {
      executor.execute(() -> handle(input));
    } catch (RejectedExecutionException closing) {
      // Closed: the watermark recorded last is where the next start resumes.
    }
  }

  /** On the shell's thread only. */
  private void handle(Input input) {
    if (closed) {
      return;
    }
    inputs.add(input);
    try {
      Input next;
      while ((next = inputs.poll()) != null) {
        for (Effect effect : core.handle(next, System.currentTimeMillis())) {
          perform(effect);
        }
      }
      pending = core.pendingMessages();
    } catch (InvariantViolation violation) {
      closed = true;
      troupe.reportFatalError("message delivery", violation);
    } catch (RuntimeException unexpected) {
      log.error("message delivery: unexpected failure; delivery stops", unexpected);
      closed = true;
    }
  }

  private void perform(Effect effect) {
    switch (effect) {
      case Effect.Read read -> {
        try {
          // The safe timestamp first, then the types: an entry at or below it was written
          // before it was taken, so if it holds a message, a type that sends messages had been
          // declared before (a turn runs only once its type is), and the check below sees it.
          // With none, everything up to it is read without reading it: a node whose types send
          // no messages spends nothing here, and its log is truncated all the same.
          long safe = replicationLog.localSafeTimestamp();
          ReplicationBatch batch = troupe.mayHaveSentMessages()
              ? replicationLog.read(dataCentreId, read.afterTimestamp(), read.maxEntries())
              : new ReplicationBatch(dataCentreId, List.of(),
                  Math.max(safe, read.afterTimestamp()));
          inputs.add(new Input.EntriesRead(batch));
        } catch (RuntimeException unavailable) {
          if (unavailable instanceof InvariantViolation violation) {
            throw violation;
          }
          log.debug("message delivery: reading the log failed: {}", unavailable.toString());
          inputs.add(new Input.ReadFailed());
        }
      }
      case Effect.Deliver deliver -> {
        DeliveryCore.Message message = deliver.message();
        troupe.deliverMessage(message.receiver(), new Turn.DeliverMessage(message.timestamp(),
                message.index(), message.sender(), message.action(), message.args()))
            .whenComplete((outcome, failure) -> {
              if (failure != null) {
                log.debug("message delivery: {} to {} not run, retried: {}", message.action(),
                    message.receiver(), failure.toString());
                feed(new Input.DeliveryFailed(message));
                return;
              }
              count(message, outcome);
              feed(new Input.Delivered(message));
            });
      }
      case Effect.RecordWatermark record -> {
        replicationLog.recordDelivered(record.timestamp()).whenComplete((ignored, failure) -> {
          if (failure != null) {
            log.warn("message delivery: recording the watermark failed: {}", failure.toString());
          }
        });
        if (truncatesLocalLog && replicationLog.deliveredWatermark() >= record.timestamp()) {
          // Nobody replicates this log: what is delivered is no longer needed.
          replicationLog.truncate(DependencyVector.of(Map.of(dataCentreId, record.timestamp())))
              .whenComplete((ignored, failure) -> {
                if (failure != null) {
                  log.warn("message delivery: truncating the log failed: {}", failure.toString());
                }
              });
        }
        inputs.add(new Input.WatermarkRecorded(replicationLog.deliveredWatermark()));
      }
    }
  }

  private void count(DeliveryCore.Message message, String outcome) {
    if (outcome == null) {
      redelivered.increment();
    } else if (Messages.DELIVERED.equals(outcome)) {
      delivered.increment();
    } else {
      failed.computeIfAbsent(outcome, reason -> new LongAdder()).increment();
      log.debug("message delivery: {} from {} to {} consumed without effect: {}",
          message.action(), message.sender(), message.receiver(), outcome);
    }
  }

  /** Stops delivering; deliveries in flight finish, and the next start resumes. */
  @Override
  public void close() {
    closed = true;
    executor.shutdownNow();
    try {
      executor.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
