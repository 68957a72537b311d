package dev.troupe.runtime.cluster;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.EntityRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Which partitions this node hosts right now, and the registry of each: the node's one answer to
 * "where do I send a message for an entity of partition p". A {@link PartitionHost} enters its
 * registry once it has acquired the partition and removes it before it releases the partition,
 * so a local message never reaches a registry whose partition this node no longer writes.
 *
 * <p>A message for a partition hosted elsewhere goes to {@link #notHostedHere}, which refuses a
 * routed request with {@code not_owner} (503; routing it to the hosting node is the routing layer's
 * work: docs/ARCHITECTURE.md, "Several nodes in one data centre").
 *
 * <p>Thread-safe: read by any thread that routes, written by the hosts.
 */
public final class HostedPartitions {
  private final AtomicReferenceArray<ActorRef<EntityRegistry.Command>> registries;
  private final AtomicReferenceArray<ActorRef<PartitionHost.Command>> hosts;
  private volatile ActorRef<EntityRegistry.Command> notHostedHere;

  public HostedPartitions(int partitions) {
    this.registries = new AtomicReferenceArray<>(partitions);
    this.hosts = new AtomicReferenceArray<>(partitions);
  }

  /** The actor that refuses what is routed to a partition this node does not host. */
  void useNotHostedHere(ActorRef<EntityRegistry.Command> refuser) {
    this.notHostedHere = refuser;
  }

  /** The registry of {@code partition} if this node hosts it, else the refuser. */
  public ActorRef<EntityRegistry.Command> registryOf(int partition) {
    ActorRef<EntityRegistry.Command> registry = registries.get(partition);
    return registry != null ? registry : notHostedHere;
  }

  /** Whether this node hosts {@code partition} (acquired, registry running). */
  public boolean hosts(int partition) {
    return registries.get(partition) != null;
  }

  /** The partitions this node hosts, ascending. */
  public List<Integer> hostedPartitions() {
    List<Integer> hosted = new ArrayList<>();
    for (int partition = 0; partition < registries.length(); partition++) {
      if (registries.get(partition) != null) {
        hosted.add(partition);
      }
    }
    return hosted;
  }

  /** The registries of the partitions hosted now (the memory budget's actor limits go to them). */
  public List<ActorRef<EntityRegistry.Command>> registries() {
    List<ActorRef<EntityRegistry.Command>> hosted = new ArrayList<>();
    for (int partition = 0; partition < registries.length(); partition++) {
      ActorRef<EntityRegistry.Command> registry = registries.get(partition);
      if (registry != null) {
        hosted.add(registry);
      }
    }
    return hosted;
  }

  public int partitions() {
    return registries.length();
  }

  void hosting(int partition, ActorRef<PartitionHost.Command> host,
      ActorRef<EntityRegistry.Command> registry) {
    hosts.set(partition, host);
    registries.set(partition, registry);
  }

  void released(int partition, ActorRef<PartitionHost.Command> host) {
    if (hosts.compareAndSet(partition, host, null)) {
      registries.set(partition, null);
    }
  }

  /** The store lost {@code partition} to another node: its host, if any, stops. */
  void lost(int partition) {
    ActorRef<PartitionHost.Command> host = hosts.get(partition);
    if (host != null) {
      host.tell(new PartitionHost.PartitionLost());
    }
  }

  /** Refuses every routed request: its partition is not hosted on this node. */
  static Behavior<EntityRegistry.Command> notHostedHere() {
    return Behaviors.receiveMessage(command -> {
      if (command instanceof EntityRegistry.Route route) {
        route.message().refuse(new TroupeException(ErrorCode.NOT_OWNER,
            route.entity() + " is in a partition this node does not host now"));
      }
      return Behaviors.same();
    });
  }
}
