package dev.troupe.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Deletions;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.DependencyExpression;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.KeyKind;
import dev.troupe.txn.entity.AccessSets;
import dev.troupe.txn.entity.LockTable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Evaluates one transaction part on one entity together with the dependencies it touches: the
 * client's turns, then the operations other participants forwarded here, then the forwards this
 * part's net change causes (smsa.txt §2.3, resolved at commit as in §2.2: "When the execution is
 * done, SmSa scans the list of operation logs and figures out the operations that need to be
 * forwarded").
 *
 * <p><b>Rules.</b> A change of a leader key's value forwards {@link Forward.LeaderChanged} along
 * its update dependencies; its deletion (or its entity's) forwards {@link Forward.LeaderDeleted}
 * along all of them and forgets them. A follower key's deletion forgets its incoming dependencies
 * and tells their leaders ({@link Forward.FollowerDeleted}). A registration ({@link
 * Turn.RegisterDependency}, on the leader) records the dependency and forwards {@link
 * Forward.Registered}, which the follower records, initializes its value from, and answers with
 * a walk ({@link Forward.Probe}) that refuses update cycles and chains over the limit.
 *
 * <p><b>Determinism.</b> Pure: the same inputs give the same operations and forwards. Forwards are
 * applied in the order given (the coordinator orders them by source, then by each source's order)
 * and produced in key order.
 *
 * <p><b>Re-evaluation.</b> A participant evaluates its part again, from the same state (its locks
 * keep it), whenever the set of forwards to it changes; the result replaces the earlier one.
 */
public final class DependencyEvaluator {
  private DependencyEvaluator() {}

  /**
   * One part's evaluation.
   *
   * @param forwarding what the part forwards, and how deep its registration walks went
   * @param error the first rejection, or {@code null}; then nothing else is meaningful
   */
  public record Evaluation(List<Operation> operations, EntityState after, Forwarding forwarding,
      TroupeException error) {
    /** What the part forwards to other entities, in a deterministic order. */
    public List<Forward> forwards() {
      return forwarding.forwards();
    }
  }

  /**
   * What the coordinator learns from a yes vote about the dependencies it maintains.
   *
   * @param forwards what the part forwards to other entities, in a deterministic order
   * @param deepestUpstream per registered dependency id, the deepest upstream walk step reached
   *     here (the coordinator checks each chain through a new dependency against the limit)
   * @param deepestDownstream the same for downstream walks
   */
  public record Forwarding(List<Forward> forwards, Map<String, Integer> deepestUpstream,
      Map<String, Integer> deepestDownstream) {
    public static final Forwarding NONE = new Forwarding(List.of(), Map.of(), Map.of());
  }

  /**
   * Whether a single-entity turn with these operations must run as a transaction instead: it is a
   * dependency registration or removal, or it changes or deletes a key that leads or follows a
   * dependency. Costs a lookup per operation (a scan of the keys only for an entity deletion).
   */
  public static boolean needsTransaction(EntityId entity, CompiledType type, EntityState before,
      Turn turn, List<Operation> operations) {
    if (turn instanceof Turn.RegisterDependency || turn instanceof Turn.DeregisterDependency) {
      return true;
    }
    if (turn instanceof Turn.ApplyReplicated) {
      return false; // forwards nothing: see evaluate
    }
    return touchesDependencies(entity, type, before, operations);
  }

  /**
   * Whether a part or turn with these turns may forward anything, judged on its entity's state:
   * under PSAC such a part is admitted alone, and such a turn runs as a transaction.
   */
  public static boolean mayForward(EntityId entity, CompiledType type, EntityState state,
      List<Turn> turns, boolean readsState) {
    if (!turns.isEmpty() && !readsState && replicaApplications(turns) == turns.size()) {
      return false; // forwards nothing: see evaluate
    }
    boolean declares = !type.spec().dependencies().isEmpty();
    LockTable.LockSet access = AccessSets.forTransaction(type, turns, readsState);
    for (Turn turn : turns) {
      if (turn instanceof Turn.RegisterDependency || turn instanceof Turn.DeregisterDependency) {
        return true;
      }
    }
    if (access.entityMode() == LockTable.Mode.WRITE) {
      return declares || hasDependencies(state);
    }
    for (Map.Entry<String, LockTable.Mode> key : access.keys().entrySet()) {
      if (key.getValue() != LockTable.Mode.WRITE) {
        continue;
      }
      if (state.get(DependencyKeys.outgoing(key.getKey())) != null
          || state.get(DependencyKeys.incoming(key.getKey())) != null) {
        return true;
      }
      if (declares) {
        try {
          if (!type.declaredDependencies(entity, key.getKey()).isEmpty()) {
            return true;
          }
        } catch (TroupeException unusable) {
          return true;
        }
      }
    }
    return false;
  }

  /** Whether the entity keeps any dependency record (a scan of its keys). */
  public static boolean hasDependencies(EntityState state) {
    for (String key : state.values().keySet()) {
      // Not every hidden key: a replication marker keeps no dependency.
      if (DependencyKeys.isDependencyKey(key)) {
        return true;
      }
    }
    return false;
  }

  private static boolean touchesDependencies(EntityId entity, CompiledType type,
      EntityState before, List<Operation> operations) {
    boolean declares = !type.spec().dependencies().isEmpty();
    for (Operation operation : operations) {
      if (operation.deletesEntity()) {
        if (hasDependencies(before)) {
          return true;
        }
        continue;
      }
      String key = operation.key();
      if (before.get(DependencyKeys.outgoing(key)) != null) {
        return true;
      }
      if (operation.deletesKey() && before.get(DependencyKeys.incoming(key))
          != null) {
        return true;
      }
      if (declares && !(operation.deletesKey())) {
        DependencyTable follows = before.get(DependencyKeys.incoming(key))
            instanceof DependencyTable table ? table : DependencyTable.EMPTY;
        List<Dependency> declared;
        try {
          declared = type.declaredDependencies(entity, key);
        } catch (TroupeException unusable) {
          return true; // the full evaluation rejects it with this message
        }
        for (Dependency dependency : declared) {
          if (follows.get(dependency.id()) == null) {
            return true;
          }
        }
      }
    }
    return false;
  }

  public static Evaluation evaluate(EntityId entity, CompiledType type, EntityState before,
      List<Turn> turns, List<Forward> incoming, long transactionId, int originDc,
      TurnLimits limits) {
    int replicaApplications = replicaApplications(turns);
    if (replicaApplications > 0
        && (replicaApplications < turns.size() || !incoming.isEmpty())) {
      // Nothing builds such a part: the replication shell's transactions hold replica
      // applications only, and they forward nothing, so nothing forwards to them.
      return failed(before, TroupeException.invalid(("%s: a replica application shares its part"
          + " with other turns or forwards").formatted(entity)));
    }
    TurnEvaluator.Sequence user = TurnEvaluator.evaluateSequence(entity, type, before, turns,
        transactionId, originDc, limits);
    if (user.error() != null) {
      return failed(before, user.error());
    }
    if (replicaApplications > 0) {
      // A remote transaction's part forwards nothing: its origin computed the forwards when it
      // committed, and they are in the same remote transaction as other entities' parts (or
      // arrive as their own transactions); forwarding here would apply them twice.
      return new Evaluation(user.operations(), user.after(), Forwarding.NONE, null);
    }
    boolean dependencyTurns = false;
    for (Turn turn : turns) {
      dependencyTurns |= turn instanceof Turn.RegisterDependency
          || turn instanceof Turn.DeregisterDependency;
    }
    if (incoming.isEmpty() && !dependencyTurns
        && !touchesDependencies(entity, type, before, user.operations())) {
      return new Evaluation(user.operations(), user.after(), Forwarding.NONE, null);
    }
    try {
      return new Part(entity, type, before, user, transactionId, originDc, limits)
          .evaluate(incoming);
    } catch (TroupeException rejection) {
      return failed(before, rejection);
    }
  }

  private static int replicaApplications(List<Turn> turns) {
    int count = 0;
    for (Turn turn : turns) {
      if (turn instanceof Turn.ApplyReplicated) {
        count++;
      }
    }
    return count;
  }

  private static Evaluation failed(EntityState before, TroupeException error) {
    return new Evaluation(List.of(), before, Forwarding.NONE, error);
  }

  /** One evaluation's working state. */
  private static final class Part {
    private final EntityId entity;
    private final CompiledType type;
    private final EntityState before;
    private final int originDc;
    private final TurnLimits limits;
    private EntityState state;
    private final List<Operation> operations;
    private final List<Forward> forwards = new ArrayList<>();
    private final Map<String, Integer> deepestUpstream = new HashMap<>();
    private final Map<String, Integer> deepestDownstream = new HashMap<>();
    /** Outgoing dependencies forgotten because their follower was deleted (not deregistered). */
    private final Set<String> forgottenForDeletedFollowers = new HashSet<>();

    Part(EntityId entity, CompiledType type, EntityState before, TurnEvaluator.Sequence user,
        long transactionId, int originDc, TurnLimits limits) {
      this.entity = entity;
      this.type = type;
      this.before = before;
      this.originDc = originDc;
      this.limits = limits;
      this.state = user.after();
      this.operations = new ArrayList<>(user.operations());
    }

    Evaluation evaluate(List<Forward> incoming) {
      for (Forward forward : incoming) {
        Invariants.check(forward.target().equals(entity), "%s received a forward for %s",
            entity, forward.target());
        apply(forward);
      }
      forwardChanges();
      checkKeyCount();
      Forwarding forwarding = forwards.isEmpty() && deepestUpstream.isEmpty()
          && deepestDownstream.isEmpty() ? Forwarding.NONE : new Forwarding(List.copyOf(forwards),
              Map.copyOf(deepestUpstream), Map.copyOf(deepestDownstream));
      return new Evaluation(List.copyOf(operations), state, forwarding, null);
    }

    /**
     * Applies one operation to the working state. A value a forward computes (a replicated,
     * summed or {@code cel:} value) meets the same limits as a client's before it is written.
     */
    private void emit(Operation operation) {
      if (operation instanceof Operation.Assign assign
          && !TurnEvaluator.certainlyWithin(assign.value(), limits.values())) {
        limits.values().check(assign.value(),
            "%s: the value dependencies compute for key '%s'".formatted(entity, assign.key()));
      }
      state = state.apply(List.of(operation), state.version() + 1, originDc);
      operations.add(operation);
    }

    private DependencyTable table(EntityState of, String hiddenKey) {
      return of.get(hiddenKey) instanceof DependencyTable table ? table : DependencyTable.EMPTY;
    }

    /** What clients see of a key (its declared default when never written); null when absent. */
    private JsonNode value(EntityState of, String key) {
      if (!of.exists()) {
        return null;
      }
      JsonNode rendered = type.renderValue(key, of);
      return rendered == null || rendered.isNull() && of.get(key) == null ? null : rendered;
    }

    // ------------------------------------------------------------- forwards applied here

    private void apply(Forward forward) {
      switch (forward) {
        case Forward.Registered registered -> registered(registered);
        case Forward.LeaderChanged changed -> leaderChanged(changed);
        case Forward.LeaderDeleted deleted -> leaderGone(deleted.dependency(), true);
        case Forward.Deregistered deregistered -> leaderGone(deregistered.dependency(), false);
        case Forward.FollowerDeleted deleted -> {
          Dependency dependency = deleted.dependency();
          String hidden = DependencyKeys.outgoing(dependency.leader().key());
          if (table(state, hidden).get(dependency.id()) != null) {
            emit(new Operation.ForgetDependency(hidden, dependency.id()));
            forgottenForDeletedFollowers.add(dependency.id());
          }
        }
        case Forward.Probe probe -> probe(probe);
        case Forward.RegistrationRequested requested -> {
          Dependency dependency = requested.dependency();
          String hidden = DependencyKeys.outgoing(dependency.leader().key());
          if (table(state, hidden).get(dependency.id()) == null) {
            List<Operation> recorded;
            try {
              recorded = TurnEvaluator.registerDependency(entity, type, state, dependency,
                  limits);
            } catch (TroupeException refused) {
              throw new TroupeException(refused.code(), "%s requires %s (type %s declares that"
                  + " it follows it): %s".formatted(dependency.follower(), dependency.leader(),
                  dependency.follower().entity().type(), refused.getMessage()));
            }
            recorded.forEach(this::emit);
          }
        }
      }
    }

    private void registered(Forward.Registered registered) {
      Dependency dependency = registered.dependency();
      String key = dependency.follower().key();
      KeyKind kind = type.kindOf(key);
      if (kind == null) {
        throw TroupeException.invalid("follower %s: type %s has no key '%s'"
            .formatted(dependency.follower(), type.name(), key));
      }
      if (dependency.kind() == DependencyKind.UPDATE && kind != KeyKind.REGISTER) {
        throw TroupeException.invalid(("follower %s is a %s; an update dependency's follower"
            + " must be a register").formatted(dependency.follower(), kind.wireName()));
      }
      String hidden = DependencyKeys.incoming(key);
      DependencyTable incoming = table(state, hidden);
      if (incoming.get(dependency.id()) != null) {
        throw new TroupeException(ErrorCode.CONFLICT,
            "dependency " + dependency.id() + " is already registered");
      }
      if (incoming.size() >= limits.maxDependenciesPerKey()) {
        throw new TroupeException(ErrorCode.TOO_LARGE, ("%s already follows %d dependencies, the"
            + " most troupe.dependencies.max-per-key allows").formatted(dependency.follower(),
            incoming.size()));
      }
      if (dependency.kind() == DependencyKind.UPDATE) {
        // All update dependencies of an aggregate follower share its function, so the first one
        // met stands for all (a follower of many leaders is not walked on every registration).
        for (DependencyTable.Entry other : incoming.all()) {
          Dependency existing = other.dependency();
          if (existing.kind() != DependencyKind.UPDATE) {
            continue;
          }
          if ((existing.function().isAggregate() || dependency.function().isAggregate())
              && !existing.function().equals(dependency.function())) {
            throw TroupeException.invalid(("%s already follows %s with function %s; an aggregate"
                + " follower takes one function from all its leaders").formatted(
                dependency.follower(), existing.leader(), existing.function().wireName()));
          }
          break;
        }
      }
      JsonNode leaderValue = registered.leaderValue();
      JsonNode current = value(state, key);
      // Only an aggregate needs each leader's contribution (forwards keep it current).
      emit(new Operation.RecordDependency(hidden, dependency,
          dependency.kind() == DependencyKind.UPDATE && dependency.function().isAggregate()
              ? leaderValue : null));
      if (dependency.kind() == DependencyKind.UPDATE) {
        DependencyFunction function = dependency.function();
        JsonNode next = switch (function) {
          case DependencyFunction.Replicate ignored -> leaderValue;
          case DependencyFunction.Sum ignored -> Numbers.add(numberOrZero(current), leaderValue);
          case DependencyFunction.Count ignored ->
              Numbers.add(numberOrZero(current), LongNode.valueOf(present(leaderValue) ? 1 : 0));
          case DependencyFunction.Min ignored -> extreme(table(state, hidden), true);
          case DependencyFunction.Max ignored -> extreme(table(state, hidden), false);
          case DependencyFunction.Custom custom -> DependencyExpression.compile(custom.expression())
              .evaluate(null, leaderValue, current, dependency.leader().key(), key,
                  limits.values());
        };
        assign(key, current, next);
      }
      // Walk down from the follower: the keys it leads, with the new dependency's kind.
      for (DependencyTable.Entry next : table(state, DependencyKeys.outgoing(key)).all()) {
        if (next.dependency().kind() == dependency.kind()) {
          walk(dependency, next.dependency().follower(), Forward.Direction.DOWNSTREAM, 1);
        }
      }
    }

    private void leaderChanged(Forward.LeaderChanged changed) {
      Dependency dependency = changed.dependency();
      String key = dependency.follower().key();
      String hidden = DependencyKeys.incoming(key);
      DependencyTable.Entry entry = table(state, hidden).get(dependency.id());
      if (entry == null || before.get(key) != null && state.get(key) == null) {
        // The follower key went in this transaction (and its dependencies go with it): the
        // deletion wins over the forwarded update.
        return;
      }
      JsonNode current = value(state, key);
      JsonNode contribution = entry.contribution();
      JsonNode newValue = changed.newValue();
      DependencyFunction function = dependency.function();
      if (function.isAggregate()) {
        emit(new Operation.RecordDependency(hidden, dependency, newValue));
      }
      JsonNode next = switch (function) {
        case DependencyFunction.Replicate ignored -> newValue;
        case DependencyFunction.Sum ignored ->
            Numbers.add(numberOrZero(current), Numbers.subtract(newValue, contribution));
        case DependencyFunction.Count ignored -> Numbers.add(numberOrZero(current),
            LongNode.valueOf((present(newValue) ? 1 : 0) - (present(contribution) ? 1 : 0)));
        case DependencyFunction.Min ignored -> extreme(table(state, hidden), true);
        case DependencyFunction.Max ignored -> extreme(table(state, hidden), false);
        case DependencyFunction.Custom custom -> DependencyExpression.compile(custom.expression())
            .evaluate(changed.oldValue(), newValue, current, dependency.leader().key(), key,
                limits.values());
      };
      assign(key, current, next);
    }

    /**
     * The leader's key was deleted ({@code deleted}) or the dependency deregistered: forget it; a
     * delete dependency's follower goes with a deleted leader; an aggregate drops the leader.
     */
    private void leaderGone(Dependency dependency, boolean deleted) {
      String key = dependency.follower().key();
      String hidden = DependencyKeys.incoming(key);
      DependencyTable.Entry entry = table(state, hidden).get(dependency.id());
      if (entry == null) {
        return;
      }
      JsonNode current = value(state, key);
      emit(new Operation.ForgetDependency(hidden, dependency.id()));
      if (dependency.kind() == DependencyKind.DELETE) {
        if (deleted && state.get(key) != null) {
          emit(Deletions.ofKey(state, key));
        }
        return;
      }
      JsonNode contribution = entry.contribution();
      switch (dependency.function()) {
        case DependencyFunction.Sum ignored ->
            assign(key, current, Numbers.subtract(numberOrZero(current), contribution));
        case DependencyFunction.Count ignored -> assign(key, current,
            Numbers.subtract(numberOrZero(current), LongNode.valueOf(present(contribution) ? 1 : 0)));
        case DependencyFunction.Min ignored -> assign(key, current, extreme(table(state, hidden), true));
        case DependencyFunction.Max ignored -> assign(key, current, extreme(table(state, hidden), false));
        case DependencyFunction.Replicate ignored -> {} // keeps the last replicated value
        case DependencyFunction.Custom ignored -> {}
      }
    }

    private void probe(Forward.Probe probe) {
      Dependency registered = probe.registered();
      KeyReference reached = probe.at();
      KeyReference start = probe.direction() == Forward.Direction.DOWNSTREAM
          ? registered.leader() : registered.follower();
      if (reached.equals(start)) {
        if (registered.kind() == DependencyKind.UPDATE) {
          throw cycle(registered);
        }
        return; // a cycle of delete dependencies ends by itself: a deleted key is not deleted again
      }
      Map<String, Integer> deepest = probe.direction() == Forward.Direction.DOWNSTREAM
          ? deepestDownstream : deepestUpstream;
      deepest.merge(registered.id(), probe.depth(), Math::max);
      String hidden = probe.direction() == Forward.Direction.DOWNSTREAM
          ? DependencyKeys.outgoing(reached.key()) : DependencyKeys.incoming(reached.key());
      for (DependencyTable.Entry next : table(state, hidden).all()) {
        if (next.dependency().kind() == registered.kind()) {
          walk(registered, probe.direction() == Forward.Direction.DOWNSTREAM
              ? next.dependency().follower() : next.dependency().leader(), probe.direction(),
              probe.depth() + 1);
        }
      }
    }

    private static TroupeException cycle(Dependency registered) {
      return new TroupeException(ErrorCode.CONFLICT, ("dependency %s -> %s would close a cycle of"
          + " update dependencies: an update would be forwarded around it forever").formatted(
          registered.leader(), registered.follower()));
    }

    /** Continues a registration's walk to {@code at}, {@code depth} dependencies away. */
    private void walk(Dependency registered, KeyReference at, Forward.Direction direction,
        int depth) {
      KeyReference start = direction == Forward.Direction.DOWNSTREAM
          ? registered.leader() : registered.follower();
      if (at.equals(start) && registered.kind() == DependencyKind.UPDATE) {
        throw cycle(registered); // a cycle is the clearer answer even where it is also too long
      }
      if (depth + 1 > limits.maxDependencyChain()) {
        throw new TroupeException(ErrorCode.TOO_LARGE, ("dependency %s -> %s would make a chain"
            + " of more than %d %s dependencies (troupe.dependencies.max-chain-length)").formatted(
            registered.leader(), registered.follower(), limits.maxDependencyChain(),
            registered.kind().wireName()));
      }
      forwards.add(new Forward.Probe(registered, at, direction, depth));
    }

    // ------------------------------------------------------------- forwards caused here

    /** Forwards this part's net change of every key it touched (in key order). */
    private void forwardChanges() {
      boolean cleared = false;
      TreeSet<String> touched = new TreeSet<>();
      for (Operation operation : operations) {
        if (operation.deletesEntity()) {
          cleared = true;
        } else {
          touched.add(DependencyKeys.describedKey(operation.key()));
        }
      }
      if (cleared) {
        for (String key : before.values().keySet()) {
          touched.add(DependencyKeys.describedKey(key));
        }
      }
      for (String key : touched) {
        forwardChange(key, cleared);
      }
    }

    private void forwardChange(String key, boolean cleared) {
      String outgoingKey = DependencyKeys.outgoing(key);
      String incomingKey = DependencyKeys.incoming(key);
      DependencyTable leadsBefore = table(before, outgoingKey);
      DependencyTable leadsNow = table(state, outgoingKey);
      JsonNode oldValue = value(before, key);
      JsonNode newValue = value(state, key);
      boolean keyDeleted = before.get(key) != null && state.get(key) == null;
      for (DependencyTable.Entry entry : leadsNow.all()) {
        Dependency dependency = entry.dependency();
        if (leadsBefore.get(dependency.id()) == null) {
          if (keyDeleted || newValue == null) {
            throw TroupeException.invalid("dependency %s -> %s: its leader has no value"
                .formatted(dependency.leader(), dependency.follower()));
          }
          forwards.add(new Forward.Registered(dependency,
              dependency.kind() == DependencyKind.UPDATE ? newValue : null));
          for (DependencyTable.Entry upstream : table(state, incomingKey).all()) {
            if (upstream.dependency().kind() == dependency.kind()) {
              walk(dependency, upstream.dependency().leader(), Forward.Direction.UPSTREAM, 1);
            }
          }
        }
      }
      if (cleared) {
        // Clearing the entity wiped its records (and re-creating keys in the same part does not
        // bring them back): tell every follower and every leader it had.
        for (DependencyTable.Entry entry : leadsBefore.all()) {
          forwards.add(new Forward.LeaderDeleted(entry.dependency()));
        }
        for (DependencyTable.Entry entry : table(before, incomingKey).all()) {
          forwards.add(new Forward.FollowerDeleted(entry.dependency()));
        }
        return;
      }
      if (keyDeleted) {
        for (DependencyTable.Entry entry : leadsNow.all()) {
          forwards.add(new Forward.LeaderDeleted(entry.dependency()));
          emit(new Operation.ForgetDependency(outgoingKey, entry.dependency().id()));
        }
        for (DependencyTable.Entry entry : table(state, incomingKey).all()) {
          forwards.add(new Forward.FollowerDeleted(entry.dependency()));
          emit(new Operation.ForgetDependency(incomingKey, entry.dependency().id()));
        }
        return;
      }
      if (state.get(key) != null) {
        // Dependencies the type declares for this key, which it does not follow yet.
        for (Dependency declared : type.declaredDependencies(entity, key)) {
          if (table(before, incomingKey).get(declared.id()) == null) {
            forwards.add(new Forward.RegistrationRequested(declared));
          }
        }
      }
      if (!Objects.equals(oldValue, newValue)) {
        for (DependencyTable.Entry entry : leadsNow.all()) {
          Dependency dependency = entry.dependency();
          if (dependency.kind() == DependencyKind.UPDATE
              && leadsBefore.get(dependency.id()) != null) {
            forwards.add(new Forward.LeaderChanged(dependency, oldValue, newValue));
          }
        }
      }
      for (DependencyTable.Entry entry : leadsBefore.all()) {
        String id = entry.dependency().id();
        if (leadsNow.get(id) == null && !forgottenForDeletedFollowers.contains(id)) {
          forwards.add(new Forward.Deregistered(entry.dependency()));
        }
      }
    }

    // ------------------------------------------------------------- values

    private void assign(String key, JsonNode current, JsonNode next) {
      JsonNode value = next == null ? NullNode.getInstance() : next;
      if (!Objects.equals(current, next) || state.get(key) == null) {
        emit(new Operation.Assign(key, value));
      }
    }

    /** The least (or greatest) numeric contribution of a follower's update dependencies. */
    private static JsonNode extreme(DependencyTable incoming, boolean least) {
      JsonNode best = null;
      for (DependencyTable.Entry entry : incoming.all()) {
        JsonNode contribution = entry.contribution();
        if (entry.dependency().kind() != DependencyKind.UPDATE || contribution == null
            || !contribution.isNumber()) {
          continue;
        }
        if (best == null || (least ? Numbers.compare(contribution, best) < 0
            : Numbers.compare(contribution, best) > 0)) {
          best = contribution;
        }
      }
      return best;
    }

    private void checkKeyCount() {
      if (state.values().size() > limits.maxKeysPerEntity()) {
        throw new TroupeException(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE, ("%s would hold %d keys with its dependency"
            + " records; an entity may hold at most %d").formatted(entity, state.values().size(),
            limits.maxKeysPerEntity()));
      }
    }
  }

  private static boolean present(JsonNode value) {
    return value != null && !value.isNull();
  }

  private static JsonNode numberOrZero(JsonNode value) {
    return value != null && value.isNumber() ? value : LongNode.valueOf(0);
  }

  /**
   * JSON number arithmetic: 64-bit integers while both operands are integers, doubles when one is
   * not. An integer sum that overflows 64 bits, or a double sum that is not finite, is refused
   * ({@code evaluation_failed}): a sum must stay exact and a value JSON can carry.
   */
  static final class Numbers {
    private Numbers() {}

    static JsonNode add(JsonNode left, JsonNode right) {
      JsonNode a = numberOrZero(left);
      JsonNode b = numberOrZero(right);
      if (a.isIntegralNumber() && b.isIntegralNumber() && a.canConvertToLong()
          && b.canConvertToLong()) {
        try {
          return LongNode.valueOf(Math.addExact(a.longValue(), b.longValue()));
        } catch (ArithmeticException overflow) {
          throw ValueLimits.evaluationFailed("the sum of %d and %d overflows a 64-bit integer"
              .formatted(a.longValue(), b.longValue()));
        }
      }
      double sum = a.doubleValue() + b.doubleValue();
      if (!Double.isFinite(sum)) {
        throw ValueLimits.evaluationFailed("the sum of %s and %s is beyond a double's range"
            .formatted(a.asText(), b.asText()));
      }
      return DoubleNode.valueOf(sum);
    }

    static JsonNode subtract(JsonNode left, JsonNode right) {
      JsonNode b = numberOrZero(right);
      JsonNode negated = b.isIntegralNumber() && b.canConvertToLong()
          && b.longValue() != Long.MIN_VALUE
          ? LongNode.valueOf(-b.longValue()) : DoubleNode.valueOf(-b.doubleValue());
      return add(left, negated);
    }

    static int compare(JsonNode left, JsonNode right) {
      if (left.isIntegralNumber() && right.isIntegralNumber() && left.canConvertToLong()
          && right.canConvertToLong()) {
        return Long.compare(left.longValue(), right.longValue());
      }
      return Double.compare(left.doubleValue(), right.doubleValue());
    }
  }
}
