package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PreparedTransaction;
import java.util.List;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands the runtime what a recovery kept in doubt (docs/ARCHITECTURE.md, "Entity messages between
 * nodes"): each prepared part whose coordinator is on another node ({@link
 * InDoubtResolution#toAsk}) goes to its entity as {@code EntityTurnCore}'s {@code
 * PreparedPartRecovered}: the part holds the entity and asks the coordinator's node ({@code
 * TransactionIds.nodeOf}) with a {@code DecisionQuery} through the transport every {@code
 * in-doubt-query-interval-millis} until a commit or abort answer arrives; and the decision
 * records kept for participants on other nodes ({@link InDoubtResolution#decisionsToKeep}) are
 * mirrored into the {@link DecisionDirectory}, so their questions are answered "committed".
 *
 * <p>Called right after a resolution and before anything else reaches the partitions' entities
 * (at start, or when a node acquires a partition), since a recovered part must reach a fresh
 * incarnation first. On one node both lists are empty.
 *
 * <p>Not adopted (logged; the part stays prepared in the store for the next start): a part that
 * needs a redo (PSAC), which the core cannot hold in doubt yet; and, likewise a limit of the core,
 * a second part in doubt on the same entity would not get the whole entity and stop the node
 * (an invariant): key-level parts recovered together are not supported yet.
 */
final class RecoveredParts {
  private static final Logger log = LoggerFactory.getLogger(RecoveredParts.class);

  private RecoveredParts() {}

  /** Adopts {@code resolution}'s parts in doubt and mirrors its kept decisions. */
  static void adopt(InDoubtResolution resolution, Function<EntityId, CompiledType> typeOf,
      EntityRoutes routes,
      DecisionDirectory decisions) {
    if (!resolution.decisionsToKeep().isEmpty()) {
      decisions.decisionsRecovered(resolution.decisionsToKeep().stream()
          .map(DecidedTransaction::transactionId).toList());
    }
    adoptParts(resolution.toAsk(), typeOf, routes);
  }

  /** Hands each part to its entity; returns how many were adopted. */
  static int adoptParts(List<PreparedTransaction> parts, Function<EntityId, CompiledType> typeOf,
      EntityRoutes routes) {
    int adopted = 0;
    for (PreparedTransaction part : parts) {
      if (part.needsRedo()) {
        log.error("the prepared part of transaction {} on {} is in doubt (coordinator on node {})"
                + " and needs a redo (PSAC), which cannot be held in doubt yet: left prepared",
            part.transactionId(), part.entity(), TransactionIds.nodeOf(part.transactionId()));
        continue;
      }
      EntityId entity = part.entity();
      routes.route(entity, new EntityActor.AdoptRecovered(part.transactionId(),
          part.operations(), typeOf.apply(entity)));
      adopted++;
    }
    if (adopted > 0) {
      log.info("{} prepared parts in doubt ask their coordinators' nodes", adopted);
    }
    return adopted;
  }
}
