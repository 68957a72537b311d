package dev.troupe.txn;

import dev.troupe.model.Invariants;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.value.DependencyTable;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Deletions;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.spec.ActionOutcome;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.value.KeyKind;
import dev.troupe.model.value.RegisterValue;
import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Evaluates one turn against a snapshot of one entity: validates it against the entity's type and
 * limits and produces the operations to commit, or a rejection that changes nothing.
 *
 * <p>Pure and deterministic: no I/O, clock or randomness (transaction id and data centre are
 * inputs). Thread-safe (stateless).
 */
public final class TurnEvaluator {
  private TurnEvaluator() {}

  /** What a turn decided. */
  public sealed interface Decision {
    /** Operations to commit; empty when the turn changes nothing. */
    record Write(List<Operation> operations) implements Decision {}

    record Reject(TroupeException error) implements Decision {}
  }

  /**
   * Several turns evaluated in order on one state, each seeing the ones before.
   *
   * @param operations all their operations, in order (set additions numbered apart)
   * @param after the state with them applied (provisional versions)
   * @param error the first rejection, or {@code null}; then nothing else is meaningful
   */
  public record Sequence(List<Operation> operations, EntityState after, TroupeException error) {}

  /**
   * The operations of a decided PSAC part, re-evaluated at recovery on the state it meets. Its
   * transaction committed, so failing now would break atomicity: that is a bug (an invariant).
   */
  public static List<Operation> redo(EntityId entity, CompiledType type, EntityState state,
      List<Turn> turns, long transactionId, int originDc, TurnLimits limits) {
    Sequence evaluated =
        evaluateSequence(entity, type, state, turns, transactionId, originDc, limits);
    Invariants.check(evaluated.error() == null,
        "the decided part of transaction %d on %s fails on recovery: %s", transactionId, entity,
        evaluated.error() == null ? "" : evaluated.error().getMessage());
    return evaluated.operations();
  }

  /**
   * Evaluates a transaction's turns on one entity in order, each against the state the previous
   * ones leave. When there are several, the set additions get distinct tag indexes (each turn alone
   * would number from 0). Pure, like {@link #evaluate}.
   */
  public static Sequence evaluateSequence(EntityId entity, CompiledType type, EntityState state,
      List<Turn> turns, long transactionId, int originDc, TurnLimits limits) {
    EntityState scratch = state;
    List<Operation> operations = new ArrayList<>();
    int additions = 0;
    for (Turn turn : turns) {
      switch (evaluate(entity, type, scratch, turn, transactionId, originDc, limits)) {
        case Decision.Reject reject -> {
          return new Sequence(List.of(), state, reject.error());
        }
        case Decision.Write write -> {
          List<Operation> renumbered = new ArrayList<>(write.operations().size());
          for (Operation operation : write.operations()) {
            // A remote part's additions keep the tags they got at their origin: they are the
            // same additions everywhere (a set's removes there name those tags).
            if (operation instanceof Operation.AddElement add && turns.size() > 1
                && !(turn instanceof Turn.ApplyReplicated)) {
              renumbered.add(new Operation.AddElement(add.key(), add.element(),
                  new Tag(originDc, transactionId, additions++)));
            } else {
              renumbered.add(operation);
            }
          }
          if (!renumbered.isEmpty()) {
            scratch = scratch.apply(renumbered, scratch.version() + 1, originDc);
            operations.addAll(renumbered);
          }
        }
      }
    }
    try {
      // Messages of several turns of one transaction on this entity: one per destination too.
      // Not for replica applications: their messages are the origin's, checked there per
      // transaction, and a batched one holds several transactions' (inert here: only the
      // sender's data centre delivers).
      if (!turns.stream().allMatch(Turn.ApplyReplicated.class::isInstance)) {
        requireOneMessagePerDestination(operations);
      }
    } catch (TroupeException twice) {
      return new Sequence(List.of(), state, twice);
    }
    return new Sequence(List.copyOf(operations), scratch, null);
  }

  public static Decision evaluate(
      EntityId entity,
      CompiledType type,
      EntityState state,
      Turn turn,
      long transactionId,
      int originDc,
      TurnLimits limits) {
    try {
      if (turn instanceof Turn.ApplyReplicated replicated) {
        // No limits either: the origin committed it, refusing it here would diverge.
        return new Decision.Write(replicaApplication(state, replicated));
      }
      if (turn instanceof Turn.DeliverMessage delivery) {
        return new Decision.Write(
            delivery(entity, type, state, delivery, transactionId, originDc, limits));
      }
      List<Operation> operations =
          operations(entity, type, state, turn, transactionId, originDc, limits);
      checkLimits(state, operations, limits);
      return new Decision.Write(operations);
    } catch (TroupeException rejection) {
      return new Decision.Reject(rejection);
    }
  }

  private static List<Operation> operations(
      EntityId entity,
      CompiledType type,
      EntityState state,
      Turn turn,
      long transactionId,
      int originDc,
      TurnLimits limits) {
    return switch (turn) {
      case Turn.AssignKeys assign -> {
        if (assign.assignments().isEmpty()) {
          throw TroupeException.invalid("nothing to assign: the body must name at least one key");
        }
        List<Operation> result = new ArrayList<>();
        // Sorted so that the journal record is the same whatever the client's key order.
        for (Map.Entry<String, JsonNode> entry : new TreeMap<>(assign.assignments()).entrySet()) {
          requireKind(type, entry.getKey(), KeyKind.REGISTER, "assigned");
          result.add(new Operation.Assign(entry.getKey(), entry.getValue()));
        }
        yield result;
      }
      case Turn.DeleteKey delete -> {
        requireDeclared(type, delete.key());
        if (!state.exists() || state.get(delete.key()) == null) {
          throw new TroupeException(
              ErrorCode.NOT_FOUND, "%s has no value for key '%s'".formatted(entity, delete.key()));
        }
        // What the turn observed goes with the deletion, so that it converges across data
        // centres (docs/ARCHITECTURE.md, "Deletes across data centres").
        yield List.of(Deletions.ofKey(state, delete.key()));
      }
      case Turn.IncrementKey increment -> {
        requireKind(type, increment.key(), KeyKind.COUNTER, "incremented");
        // What clients see: the declared default plus every increment.
        long current = type.renderValue(increment.key(), state).asLong();
        try {
          Math.addExact(current, increment.by());
        } catch (ArithmeticException overflow) {
          // Refused, never wrapped; whether it overflows depends on the state the turn meets.
          throw ValueLimits.evaluationFailed(
              "incrementing '%s' (%d) by %d would overflow a 64-bit counter"
                  .formatted(increment.key(), current, increment.by()));
        }
        yield increment.by() == 0
            ? List.of()
            : List.of(new Operation.Increment(increment.key(), increment.by()));
      }
      case Turn.AddElement add -> {
        requireKind(type, add.key(), KeyKind.SET, "added to");
        yield List.of(
            new Operation.AddElement(add.key(), add.element(), new Tag(originDc, transactionId, 0)));
      }
      case Turn.RemoveElement remove -> {
        requireKind(type, remove.key(), KeyKind.SET, "removed from");
        Set<Tag> observed =
            state.get(remove.key()) instanceof SetValue set ? set.tagsOf(remove.element()) : Set.of();
        yield observed.isEmpty()
            ? List.of()
            : List.of(new Operation.RemoveElement(remove.key(), remove.element(), observed));
      }
      case Turn.DiscardHiddenValues ignored -> {
        List<Operation> deletions = new ArrayList<>();
        if (state.exists()) {
          for (String key : TypeEvolution.keysToDiscard(type.spec(), state)) {
            deletions.add(Deletions.ofKey(state, key));
          }
        }
        yield deletions;
      }
      case Turn.DeleteEntity ignored -> {
        if (!state.exists()) {
          throw new TroupeException(ErrorCode.NOT_FOUND, entity + " does not exist");
        }
        yield Deletions.ofEntity(state);
      }
      case Turn.RegisterDependency register -> registerDependency(entity, type, state,
          register.dependency(), limits);
      case Turn.DeregisterDependency deregister -> {
        String hidden = DependencyKeys.outgoing(deregister.leaderKey());
        if (!(state.get(hidden) instanceof DependencyTable table)
            || table.get(deregister.dependencyId()) == null) {
          throw new TroupeException(ErrorCode.NOT_FOUND,
              "no dependency " + deregister.dependencyId() + " is registered");
        }
        yield List.of(new Operation.ForgetDependency(hidden, deregister.dependencyId()));
      }
      case Turn.ApplyReplicated replicated -> replicaApplication(state, replicated);
      case Turn.DeliverMessage delivery ->
          delivery(entity, type, state, delivery, transactionId, originDc, limits);
      case Turn.InvokeAction invoke -> {
        if (type.isSchemaless()) {
          throw new TroupeException(
              ErrorCode.UNKNOWN_TYPE,
              "type '%s' is not declared, so it has no actions".formatted(entity.type()));
        }
        yield switch (type.invoke(invoke.action(), invoke.params(), state, transactionId,
            originDc, limits.values())) {
          case ActionOutcome.Applied applied -> withMessages(type, invoke,
              checkComputedValues(entity, invoke.action(), applied.operations(),
                  limits.values()), limits);
          case ActionOutcome.PreconditionFailed failed ->
              throw new TroupeException(ErrorCode.PRECONDITION_FAILED, failed.message());
        };
      }
    };
  }

  /**
   * The action's operations followed by one {@link Operation.SendMessage} per message it declares
   * ({@code send}), resolved from its arguments. Two to one entity are refused: at most one
   * message per destination per transaction (TTCC §3.1; two templates of one action may name one
   * entity for some arguments).
   */
  private static List<Operation> withMessages(CompiledType type, Turn.InvokeAction invoke,
      List<Operation> operations, TurnLimits limits) {
    if (!type.sendsMessages(invoke.action())) {
      return operations;
    }
    List<Operation> result = new ArrayList<>(operations);
    for (dev.troupe.model.spec.SyncInvocation message :
        type.messages(invoke.action(), invoke.params(), limits.values())) {
      if (message.entity().type().startsWith("$")) {
        // Reserved entities (type definitions, idempotency records) take no actions.
        throw TroupeException.invalid("a message to the reserved entity " + message.entity());
      }
      result.add(new Operation.SendMessage(message.entity(), message.action(),
          message.arguments()));
    }
    requireOneMessagePerDestination(result);
    return result;
  }

  private static void requireOneMessagePerDestination(List<Operation> operations) {
    Set<EntityId> receivers = new java.util.HashSet<>();
    for (Operation operation : operations) {
      if (operation instanceof Operation.SendMessage message
          && !receivers.add(message.receiver())) {
        throw ValueLimits.evaluationFailed("a second message to " + message.receiver()
            + " in one transaction; at most one message per destination is sent");
      }
    }
  }

  /**
   * A message's delivery (docs/ARCHITECTURE.md, "Causal messages"): nothing when the receiver's
   * delivered marker covers it; else the marker, then the receiving action's operations (its own
   * messages included), or the marker alone, recording why, when the action cannot run here.
   * Never rejected for the action's sake: a message that cannot be applied is consumed, not
   * retried forever.
   */
  static List<Operation> delivery(EntityId entity, CompiledType type, EntityState state,
      Turn.DeliverMessage delivery, long transactionId, int originDc, TurnLimits limits) {
    String marker = Messages.deliveredMarkerKey(delivery.markerOrigin(originDc));
    JsonNode current = state.get(marker) instanceof RegisterValue register
        ? register.value() : null;
    // With sync calls the turn is one part of a transaction (RequestCore expands the calls):
    // it must fail with it, never consume the message while the calls commit.
    boolean withCalls = delivery.consumedOutcome() == null && !type.isSchemaless()
        && type.spec().actions().get(delivery.action()) instanceof
            dev.troupe.model.spec.ActionSpec spec && !spec.sync().isEmpty();
    if (Messages.covers(current, delivery.messageTimestamp(), delivery.messageIndex())) {
      if (withCalls) {
        throw new TroupeException(ErrorCode.CONFLICT, Messages.ALREADY_DELIVERED, "the message ("
            + delivery.messageTimestamp() + ", " + delivery.messageIndex() + ") was delivered to "
            + entity + " before");
      }
      return List.of();
    }
    String outcome = Messages.DELIVERED;
    List<Operation> actionOperations;
    if (delivery.consumedOutcome() != null) {
      outcome = delivery.consumedOutcome();
      actionOperations = List.of();
    } else if (withCalls) {
      actionOperations = operations(entity, type, state,
          new Turn.InvokeAction(delivery.action(), delivery.args()), transactionId, originDc,
          limits);
      checkLimits(state, actionOperations, limits);
    } else {
      try {
        if (type.isSchemaless()) {
          throw new TroupeException(ErrorCode.UNKNOWN_TYPE,
              "type '%s' is not declared, so it has no actions".formatted(entity.type()));
        }
        actionOperations = operations(entity, type, state,
            new Turn.InvokeAction(delivery.action(), delivery.args()), transactionId, originDc,
            limits);
        checkLimits(state, actionOperations, limits);
      } catch (TroupeException failed) {
        outcome = failed.code().wireName();
        actionOperations = List.of();
      }
    }
    List<Operation> operations = new ArrayList<>(actionOperations.size() + 1);
    operations.add(new Operation.Assign(marker, Messages.markerValue(
        delivery.messageTimestamp(), delivery.messageIndex(), outcome)));
    operations.addAll(actionOperations);
    return operations;
  }

  /**
   * A remote application's operations on one entity (docs/ARCHITECTURE.md, "Applying a remote
   * transaction", "Batched application"): the segments the entity's marker for the origin does
   * not cover, each converted by {@link #replicatedOperations}, preceded by the marker set to the
   * last of them; nothing when the marker covers every segment (all applied before, whichever
   * way they were grouped then).
   *
   * <p>Applied whatever the local type declares: a key the origin wrote as one kind and this data
   * centre's type declares as another (the types differ while a type change reaches the data
   * centres one by one) still takes the operation. The materializer never fails on a mismatch (an
   * increment of a register key replaces it by a counter, a remove from a non-set does nothing),
   * and every data centre applies the same operations, so they converge; the type's rendering
   * decides what clients see, as for any stored value the type does not describe.
   */
  static List<Operation> replicaApplication(EntityState state, Turn.ApplyReplicated replicated) {
    String marker = ReplicaApplication.markerKey(replicated.originDc());
    long appliedUpTo = state.get(marker) instanceof RegisterValue applied
        && applied.value().canConvertToLong() ? applied.value().asLong() : Long.MIN_VALUE;
    List<Operation> operations = new ArrayList<>();
    long last = appliedUpTo;
    for (Turn.ApplyReplicated.Segment segment : replicated.segments()) {
      if (segment.transactionTimestamp() <= appliedUpTo) {
        continue; // applied before (a re-application after a crash, a duplicate)
      }
      if (containedInInstalledState(state, replicated.originDc(), segment)) {
        continue; // in the state a bootstrap installed
      }
      operations.addAll(replicatedOperations(replicated.originDc(), segment));
      last = segment.transactionTimestamp();
    }
    if (last == appliedUpTo) {
      return List.of();
    }
    operations.add(0, new Operation.Assign(marker, LongNode.valueOf(last)));
    return operations;
  }

  /**
   * One remote transaction's part (one segment) as the operations this data centre writes, each
   * in its replicated form ({@link ReplicatedOperations#replicated}, the one place that conversion
   * lives).
   */
  static List<Operation> replicatedOperations(int originDc,
      Turn.ApplyReplicated.Segment replicated) {
    List<Operation> operations = new ArrayList<>(replicated.operations().size());
    for (Operation operation : replicated.operations()) {
      operations.add(ReplicatedOperations.replicated(operation, replicated.stampTimestamp(),
          originDc));
    }
    return operations;
  }

  /**
   * Whether the part is already in the state this DC installed from its origin's bootstrap image
   * (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"): the entity's {@code
   * $installed:<origin>} marker is the commit timestamp of the last journal record of the origin
   * the installed state contains, and a part's stamp is its own journal record's commit timestamp
   * at the origin, so the part is contained exactly when its stamp is at or below the marker. Per
   * part, not per transaction: under PSAC two transactions may commit on one entity out of their
   * decisions' order, so a transaction timestamp would not say it.
   */
  static boolean containedInInstalledState(EntityState state, int originDc,
      Turn.ApplyReplicated.Segment segment) {
    return state.get(ReplicaApplication.installedKey(originDc))
            instanceof RegisterValue installed
        && installed.value().canConvertToLong()
        && installed.value().asLong() >= segment.stampTimestamp();
  }

  /**
   * Holds the values an action computed to the limits a client's values meet at the HTTP
   * boundary (size, nesting, string length, finite numbers), before anything is written: an
   * effect doubling a string is refused once the result would pass {@code max-value-bytes}.
   */
  private static List<Operation> checkComputedValues(EntityId entity, String action,
      List<Operation> operations, ValueLimits limits) {
    for (Operation operation : operations) {
      // The message is built only for a value that needs the full check (issue 20: building it
      // for every computed value, and serializing each integer to measure it, were 3.5 % of the
      // embedded SmallBank mix's samples).
      switch (operation) {
        case Operation.Assign assign when !certainlyWithin(assign.value(), limits) ->
            limits.check(assign.value(),
                "%s.%s: the value of key '%s'".formatted(entity, action, assign.key()));
        case Operation.AddElement add when !certainlyWithin(add.element(), limits) ->
            limits.check(add.element(),
                "%s.%s: an element of set '%s'".formatted(entity, action, add.key()));
        default -> {}
      }
    }
    return operations;
  }

  /**
   * Whether {@code value} passes {@link ValueLimits#check} whatever it holds, so the check can be
   * skipped: an integer node of at most 64 bits, a boolean or null is a scalar (no nesting, no
   * string), an integer of 64 bits is within the range stored integers have, and its JSON is at
   * most 20 bytes ({@code -9223372036854775808}; {@code false} 5, {@code null} 4), within any
   * {@code max-value-bytes} of at least {@value #LONGEST_SCALAR_JSON_BYTES}. Anything else (a
   * string, a container, a decimal or a big integer) takes the full check.
   */
  static boolean certainlyWithin(JsonNode value, ValueLimits limits) {
    return (value.isLong() || value.isInt() || value.isShort() || value.isBoolean()
        || value.isNull()) && limits.maxValueBytes() >= LONGEST_SCALAR_JSON_BYTES;
  }

  /** The longest JSON of a 64-bit integer, a boolean or null: {@code -9223372036854775808}. */
  static final int LONGEST_SCALAR_JSON_BYTES = 20;

  /**
   * A registration on its leader (smsa.txt §2.3.5): the leader key must hold a value, the two ends
   * must be different entities, and the key may lead at most {@code maxDependenciesPerKey}.
   */
  static List<Operation> registerDependency(EntityId entity, CompiledType type,
      EntityState state, Dependency dependency, TurnLimits limits) {
    Invariants.check(dependency.leader().entity().equals(entity),
        "registration of %s sent to %s", dependency.id(), entity);
    if (dependency.follower().entity().equals(entity)) {
      throw TroupeException.invalid("a dependency joins keys of two different entities; both"
          + " ends are on " + entity);
    }
    String key = dependency.leader().key();
    if (type.kindOf(key) == null) {
      throw TroupeException.invalid(
          "leader %s: type %s has no key '%s'".formatted(dependency.leader(), type.name(), key));
    }
    if (!state.exists() || state.get(key) == null && type.renderValue(key, state) == null) {
      throw new TroupeException(ErrorCode.NOT_FOUND,
          "leader %s does not exist: a dependency's leader key must hold a value"
              .formatted(dependency.leader()));
    }
    String hidden = DependencyKeys.outgoing(key);
    DependencyTable table =
        state.get(hidden) instanceof DependencyTable existing ? existing : DependencyTable.EMPTY;
    if (table.get(dependency.id()) != null) {
      throw new TroupeException(ErrorCode.CONFLICT,
          "dependency " + dependency.id() + " is already registered");
    }
    if (table.size() >= limits.maxDependenciesPerKey()) {
      throw new TroupeException(ErrorCode.TOO_LARGE, ("%s already leads %d dependencies, the"
          + " most troupe.dependencies.max-per-key allows").formatted(dependency.leader(),
          table.size()));
    }
    return List.of(new Operation.RecordDependency(hidden, dependency, null));
  }

  private static void requireDeclared(CompiledType type, String key) {
    requireVisible(key);
    if (type.kindOf(key) == null) {
      throw TroupeException.invalid(
          "type '%s' has no key '%s'".formatted(type.name(), key));
    }
  }

  /** Keys starting with '$' hold Troupe's own records: no client operation reaches them. */
  private static void requireVisible(String key) {
    if (DependencyKeys.isHidden(key)) {
      throw TroupeException.invalid(
          "key '%s': keys starting with '$' are reserved for Troupe's own records".formatted(key));
    }
  }

  private static void requireKind(CompiledType type, String key, KeyKind expected, String verb) {
    requireVisible(key);
    KeyKind kind = type.kindOf(key);
    if (kind == null) {
      throw TroupeException.invalid("type '%s' has no key '%s'".formatted(type.name(), key));
    }
    if (kind != expected) {
      throw TroupeException.invalid(
          "key '%s' is a %s and cannot be %s like a %s"
              .formatted(key, kind.wireName(), verb, expected.wireName()));
    }
  }

  /**
   * Refuses operations that would push the entity past its limits. Counts the keys the operations
   * add or remove instead of copying the key set, so the check costs the operations' size, not
   * the entity's (an entity with key families may hold many keys).
   */
  private static void checkLimits(EntityState state, List<Operation> operations, TurnLimits limits) {
    Map<String, Boolean> present = new HashMap<>();
    Map<String, Integer> added = new HashMap<>();
    boolean cleared = false;
    for (Operation operation : operations) {
      switch (operation) {
        case Operation.Assign assign -> present.put(assign.key(), true);
        case Operation.AssignReplicated assign -> present.put(assign.key(), true);
        case Operation.Increment increment -> present.put(increment.key(), true);
        case Operation.IncrementReplicated increment -> present.put(increment.key(), true);
        case Operation.AddElement add -> {
          present.put(add.key(), true);
          Value current = state.get(add.key());
          boolean known = current instanceof SetValue set && set.contains(add.element());
          // New elements of this turn count too: an action's set effect may add many at once.
          // (Removals in the same turn are not subtracted: a conservative bound.)
          int size = (current instanceof SetValue set ? set.size() : 0)
              + (known ? 0 : added.merge(add.key(), 1, Integer::sum) - 1);
          if (size >= limits.maxSetElements() && !known) {
            throw new TroupeException(
                ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
                "set '%s' already holds the maximum of %d elements"
                    .formatted(add.key(), limits.maxSetElements()));
          }
        }
        case Operation.DeleteKey delete -> present.put(delete.key(), false);
        case Operation.DeleteKeyReplicated delete -> present.put(delete.key(), false);
        case Operation.DeleteCounter delete -> present.put(delete.key(), false);
        case Operation.DeleteSet delete -> present.put(delete.key(), false);
        case Operation.DeleteEntity ignored -> {
          cleared = true;
          present.clear();
        }
        case Operation.DeleteEntityReplicated ignored -> {
          cleared = true;
          present.clear();
        }
        case Operation.RemoveElement ignored -> {}
        case Operation.RecordDependency record -> present.put(record.key(), true);
        case Operation.ForgetDependency ignored -> {}
        case Operation.SendMessage ignored -> {}
      }
    }
    long keys = cleared ? 0 : state.values().size();
    for (Map.Entry<String, Boolean> key : present.entrySet()) {
      boolean before = !cleared && state.values().containsKey(key.getKey());
      if (key.getValue() && !before) {
        keys++;
      } else if (!key.getValue() && before) {
        keys--;
      }
    }
    if (keys > limits.maxKeysPerEntity()) {
      throw new TroupeException(
          ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
          "an entity may hold at most %d keys".formatted(limits.maxKeysPerEntity()));
    }
  }
}
