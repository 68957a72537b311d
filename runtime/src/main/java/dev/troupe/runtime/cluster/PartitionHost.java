package dev.troupe.runtime.cluster;

import dev.troupe.runtime.EntityRegistry;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.StashBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sharded entity of one storage partition (entity type {@code troupe-partition}, entity id =
 * shard id = the partition's number): on the member sharding places it on, it is the
 * partition's host. A thin shell with three states:
 *
 * <ol>
 *   <li><b>Acquiring.</b> At start it acquires the partition in the store (off its thread:
 *       acquiring recovers the partition) and stashes what arrives, so nothing reaches a registry
 *       before this node writes the partition. Acquisition failing stops the host; the next
 *       message for the partition starts it again.
 *   <li><b>Hosting.</b> Runs the partition's {@link EntityRegistry} as its child, enters it in
 *       {@link HostedPartitions} (local requests go straight to it), and hands every {@link
 *       WireFrame} that arrives to the node's inbox.
 *   <li><b>Handing off.</b> On {@link HandOff} (sharding's stop message when it moves the
 *       partition, or when this member leaves) it leaves {@link HostedPartitions}, stops the
 *       registry, releases the partition in the store and stops; sharding starts it on the new
 *       member only after that (or after {@code troupe.cluster.hand-off-timeout-millis}, the
 *       owner epoch then fencing any late write of this one). On {@link PartitionLost} (the
 *       store found a newer owner and refuses the partition's commits) it does the same.
 * </ol>
 */
public final class PartitionHost {
  private static final Logger log = LoggerFactory.getLogger(PartitionHost.class);

  /** Messages of a partition's host. */
  public sealed interface Command
      permits WireFrame, StartPartition, HandOff, PartitionLost, Acquired, AcquireFailed,
          Released {}

  /**
   * Starts the host if it is not running (the boot's start-all pass sends one to every
   * partition); does nothing else. Crosses nodes ({@link WireFrameSerializer}, no bytes).
   */
  public record StartPartition() implements Command {
    public static final StartPartition INSTANCE = new StartPartition();
  }

  /** Sharding's stop message: hand the partition off (release it in the store) and stop. */
  public record HandOff() implements Command {}

  /** The store found another node owns the partition now: stop its writer and stop. */
  public record PartitionLost() implements Command {}

  private record Acquired() implements Command {}

  private record AcquireFailed(Throwable error) implements Command {}

  private record Released(Throwable errorOrNull) implements Command {}

  private final ActorContext<Command> context;
  private final int partition;
  private final PartitionOwner ownership;
  private final HostedPartitions hosted;
  private final ClusterTransport transport;
  private final Executor blocking;
  private final HandOffMetrics handOffs;

  private PartitionHost(ActorContext<Command> context, int partition, PartitionOwner ownership,
      HostedPartitions hosted, ClusterTransport transport, Executor blocking,
      HandOffMetrics handOffs) {
    this.context = context;
    this.handOffs = handOffs;
    this.partition = partition;
    this.ownership = ownership;
    this.hosted = hosted;
    this.transport = transport;
    this.blocking = blocking;
  }

  /**
   * @param registry makes the partition's registry (run as this host's child once acquired)
   * @param blocking where the store's acquire and release run (they block)
   * @param handOffs where the acquisition's and the release's durations are recorded
   */
  public static Behavior<Command> create(int partition, PartitionOwner ownership,
      HostedPartitions hosted, ClusterTransport transport, Executor blocking,
      Supplier<Behavior<EntityRegistry.Command>> registry, int stashedMessages,
      HandOffMetrics handOffs) {
    return Behaviors.withStash(stashedMessages, stash -> Behaviors.setup(context -> {
      PartitionHost host = new PartitionHost(context, partition, ownership, hosted, transport,
          blocking, handOffs);
      context.pipeToSelf(CompletableFuture.runAsync(() -> {
            // Acquisition, recovery and the parts in doubt resolved: the whole take-over.
            long started = System.nanoTime();
            ownership.acquirePartition(partition);
            handOffs.recordAcquired(System.nanoTime() - started);
          }, blocking),
          (ignored, error) -> error == null ? new Acquired() : new AcquireFailed(error));
      return host.acquiring(stash, registry);
    }));
  }

  private Behavior<Command> acquiring(StashBuffer<Command> stash,
      Supplier<Behavior<EntityRegistry.Command>> registry) {
    return Behaviors.receiveMessage(command -> switch (command) {
      case Acquired acquired -> {
        ActorRef<EntityRegistry.Command> child = context.spawn(registry.get(), "registry");
        hosted.hosting(partition, context.getSelf(), child);
        ownership.partitionHosted(partition);
        log.info("hosting partition {}", partition);
        yield stash.unstashAll(hosting(child));
      }
      case AcquireFailed failed -> {
        handOffs.recordAcquireFailed();
        log.error("could not acquire partition {}; its next message starts it again",
            partition, failed.error());
        yield Behaviors.stopped();
      }
      case StartPartition start -> Behaviors.same();
      // A hand-off or a lost partition is never dropped: it decides the host's end.
      case HandOff handOff -> stashOrEnd(stash, handOff);
      case PartitionLost lost -> stashOrEnd(stash, lost);
      case WireFrame frame -> {
        if (stash.isFull()) {
          transport.droppedWhileAcquiring();
        } else {
          stash.stash(frame);
        }
        yield Behaviors.same();
      }
      case Released released -> Behaviors.same(); // not released before acquired: never sent
    });
  }

  private Behavior<Command> stashOrEnd(StashBuffer<Command> stash, Command end) {
    if (stash.isFull()) {
      return endingWhenAcquired();
    }
    stash.stash(end);
    return Behaviors.same();
  }

  /** The stash is full and the host must end: wait for the acquisition, then release and stop. */
  private Behavior<Command> endingWhenAcquired() {
    return Behaviors.receiveMessage(command -> switch (command) {
      case Acquired acquired -> releasing();
      case AcquireFailed failed -> Behaviors.stopped();
      case WireFrame frame -> {
        transport.droppedWhileAcquiring();
        yield Behaviors.same();
      }
      case StartPartition start -> Behaviors.same();
      case HandOff handOff -> Behaviors.same();
      case PartitionLost lost -> Behaviors.same();
      case Released released -> Behaviors.same();
    });
  }

  private Behavior<Command> hosting(ActorRef<EntityRegistry.Command> registry) {
    return Behaviors.receiveMessage(command -> switch (command) {
      case WireFrame frame -> {
        transport.deliverArrived(frame);
        yield Behaviors.same();
      }
      case StartPartition start -> Behaviors.same();
      case HandOff handOff -> {
        context.stop(registry);
        log.info("handing partition {} off", partition);
        yield releasing();
      }
      case PartitionLost lost -> {
        // The store refuses the partition's commits already; releasing stops its writer.
        handOffs.recordLost();
        context.stop(registry);
        log.warn("partition {} is owned by another node now; its host here stops", partition);
        yield releasing();
      }
      case Acquired acquired -> Behaviors.same(); // acquired once: never sent again
      case AcquireFailed failed -> Behaviors.same();
      case Released released -> Behaviors.same();
    });
  }

  /** Releases the partition in the store (off this thread), then stops. */
  private Behavior<Command> releasing() {
    hosted.released(partition, context.getSelf());
    context.pipeToSelf(CompletableFuture.runAsync(() -> {
          long started = System.nanoTime();
          ownership.releasePartition(partition);
          handOffs.recordReleased(System.nanoTime() - started);
        }, blocking),
        (ignored, error) -> new Released(error));
    return Behaviors.receiveMessage(command -> switch (command) {
      case Released released -> {
        if (released.errorOrNull() != null) {
          log.warn("releasing partition {} failed; the next owner's epoch fences this node",
              partition, released.errorOrNull());
        }
        yield Behaviors.stopped();
      }
      // A turn, step or read that still arrives is refused not_owner (the partition is no longer
      // in HostedPartitions; nothing done), so its caller learns at once instead of after its
      // timeout, and a turn or read goes again to the new host (RemoteReplies). What a
      // coordinator sends is dropped as before: the coordinator resends or times out.
      case WireFrame frame -> {
        transport.deliverWhileHandingOff(frame);
        yield Behaviors.same();
      }
      case StartPartition start -> Behaviors.same();
      case HandOff handOff -> Behaviors.same();
      case PartitionLost lost -> Behaviors.same();
      case Acquired acquired -> Behaviors.same();
      case AcquireFailed failed -> Behaviors.same();
    });
  }
}
