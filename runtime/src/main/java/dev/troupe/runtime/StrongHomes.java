package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.NotHomeException;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CausalPreconditions;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.Consistency;
import dev.troupe.model.spec.HomeRule;
import dev.troupe.model.spec.SyncInvocation;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.runtime.replication.ReplicationSettings;
import dev.troupe.txn.Turn;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The engine's side of strong types with a home DC (docs/ARCHITECTURE.md, "Strong types with a
 * home DC"): what may be declared in this DC, and which writes this DC may run.
 *
 * <ul>
 *   <li><b>Declarations.</b> With peers, a causal type must pass {@link CausalPreconditions};
 *       in a named DC a strong type's single home must be this DC or one of its peers ({@code
 *       invalid_request}; a per-entity {@link HomeRule}'s answers are checked per write). The
 *       types already stored are checked the same way when the engine opens: a DC given peers
 *       after declaring an unsafe causal type refuses to start (its operator redeclares the type
 *       strong, without peers, first).
 *   <li><b>Writes.</b> A write to an entity of a strong type homed in another DC is refused before
 *       anything is done, with {@link NotHomeException} ({@code not_home}) naming the home: a
 *       turn, an action and every entity its {@code sync} calls reach, a static transaction, a
 *       dependency's registration. So nothing, embedded use included, runs such a write outside
 *       its home; the server forwards what this refuses. A transaction writing strong entities of
 *       two homes, an interactive step writing a strong entity homed elsewhere, and a dependency
 *       whose strong follower's home is not its leader's are {@code invalid_request} (no single
 *       DC may run them). Remote applications ({@code ApplyReplicated}) and a migration's
 *       rewrites are never refused: each DC applies those to its own copy.
 * </ul>
 *
 * <p>On a node without a DC name (a single DC) nothing is refused. Stateless apart from its
 * settings; thread-safe.
 */
final class StrongHomes {
  /** Most sync calls followed from one request (a bound on the walk; the engine's own is lower). */
  private static final int MAX_SYNC_CALLS_FOLLOWED = 10_000;

  private final String dataCentreName;
  private final List<String> peerNames;
  private final Function<EntityId, CompiledType> typeOf;
  /**
   * Per-entity home rules by text, compiled once. Grows with the distinct rules declared while
   * the engine runs (a handful): no bound needed.
   */
  private final Map<String, HomeRule> rules = new ConcurrentHashMap<>();

  StrongHomes(ReplicationSettings replication, Function<EntityId, CompiledType> typeOf) {
    this.dataCentreName = replication.dataCentreName();
    this.peerNames = replication.peerNames();
    this.typeOf = typeOf;
  }

  /**
   * Checks a declaration against this DC's configuration.
   *
   * @throws TroupeException {@code invalid_request} naming each problem
   */
  void checkDeclaration(TypeSpec spec) {
    List<String> problems = problems(spec);
    if (!problems.isEmpty()) {
      throw TroupeException.invalid(String.join("; ", problems));
    }
  }

  /**
   * Checks the stored declarations when the engine opens.
   *
   * @throws TroupeException {@code invalid_request} naming each offending type: the engine does
   *     not start
   */
  void checkStored(Collection<TypeSpec> specs) {
    List<String> problems = new ArrayList<>();
    for (TypeSpec spec : specs) {
      for (String problem : problems(spec)) {
        problems.add("type '" + spec.name() + "': " + problem);
      }
    }
    if (!problems.isEmpty()) {
      throw TroupeException.invalid("stored type declarations are not safe in data centre '"
          + dataCentreName + "' with peers " + peerNames + ": " + String.join("; ", problems)
          + ". Start without troupe.dc.peers, redeclare these types (strong with a home, or"
          + " without the preconditions), then start with peers again");
    }
  }

  private List<String> problems(TypeSpec spec) {
    if (dataCentreName.isEmpty()) {
      return List.of();
    }
    List<String> problems = new ArrayList<>();
    if (!peerNames.isEmpty()) {
      problems.addAll(CausalPreconditions.violations(spec));
    }
    Consistency consistency = spec.consistency();
    if (consistency.home() != null && !consistency.home().equals(dataCentreName)
        && !peerNames.contains(consistency.home())) {
      problems.add("home: '" + consistency.home() + "' is neither this data centre ('"
          + dataCentreName + "') nor one of its peers " + peerNames);
    }
    return problems;
  }

  /** Refuses a turn that writes (itself or by its sync calls) a strong entity homed elsewhere. */
  void checkTurn(EntityId entity, Turn turn) {
    if (dataCentreName.isEmpty() || turn instanceof Turn.DiscardHiddenValues
        || turn instanceof Turn.ApplyReplicated) {
      return;
    }
    requireOneHome(homesWritten(List.of(new TransactionRequest.Operation(entity, turn))));
  }

  /** Refuses a transaction whose writes need another DC, or two. */
  void checkTransaction(TransactionRequest request) {
    if (dataCentreName.isEmpty()) {
      return;
    }
    List<TransactionRequest.Operation> writes = new ArrayList<>();
    for (TransactionRequest.Operation operation : request.operations()) {
      if (!(operation.turn() instanceof Turn.ApplyReplicated)) {
        writes.add(operation);
      }
    }
    requireOneHome(homesWritten(writes));
  }

  /** Refuses an interactive step that writes a strong entity homed elsewhere (not forwardable). */
  void checkInteractiveStep(EntityId entity, Turn turn) {
    if (dataCentreName.isEmpty() || turn == null) {
      return;
    }
    Map<String, EntityId> homes =
        homesWritten(List.of(new TransactionRequest.Operation(entity, turn)));
    for (Map.Entry<String, EntityId> home : homes.entrySet()) {
      if (!home.getKey().equals(dataCentreName)) {
        throw TroupeException.invalid("an interactive transaction's step writes " + home.getValue()
            + ", of a strong type homed in data centre '" + home.getKey() + "', not here ('"
            + dataCentreName + "'): run the interactive transaction in its home");
      }
    }
  }

  /**
   * A dependency's follower of a strong type must have a leader of a strong type with the same
   * home: the leader's writes write the follower wherever they run.
   */
  void checkDependency(EntityId leader, EntityId follower) {
    if (dataCentreName.isEmpty()) {
      return;
    }
    String followerHome = homeOf(follower);
    if (followerHome != null && !followerHome.equals(homeOf(leader))) {
      throw TroupeException.invalid("the follower " + follower + " is of a strong type homed in '"
          + followerHome + "', its leader " + leader + " is not: the leader's writes would write"
          + " the follower outside its home");
    }
  }

  private void requireOneHome(Map<String, EntityId> homes) {
    if (homes.size() > 1) {
      List<String> named = new ArrayList<>();
      homes.forEach((home, entity) -> named.add(entity + " (home '" + home + "')"));
      throw TroupeException.invalid("the request writes strong entities of several home data"
          + " centres: " + String.join(", ", named) + "; one request may write strong entities"
          + " of one home only: split it");
    }
    if (homes.size() == 1) {
      Map.Entry<String, EntityId> home = homes.entrySet().iterator().next();
      if (!home.getKey().equals(dataCentreName)) {
        throw new NotHomeException(home.getKey(), home.getValue() + " is of a strong type homed"
            + " in data centre '" + home.getKey() + "': only its home runs its writes, this is '"
            + dataCentreName + "'; nothing was done");
      }
    }
  }

  /**
   * Home DC -> one strong entity written there, for the operations and every sync call they
   * reach (arguments that do not bind are left to the request's own checks).
   */
  private Map<String, EntityId> homesWritten(List<TransactionRequest.Operation> operations) {
    Map<String, EntityId> homes = new TreeMap<>();
    Deque<TransactionRequest.Operation> pending = new ArrayDeque<>(operations);
    Set<TransactionRequest.Operation> seen = new HashSet<>();
    int followed = 0;
    while (!pending.isEmpty() && followed++ < MAX_SYNC_CALLS_FOLLOWED) {
      TransactionRequest.Operation operation = pending.poll();
      if (operation.turn() == null || !seen.add(operation)
          || operation.entity().type().startsWith("$")) {
        continue;
      }
      CompiledType type = typeOf.apply(operation.entity());
      String home = homeOf(operation.entity(), type.spec().consistency());
      if (home != null) {
        homes.putIfAbsent(home, operation.entity());
      }
      if (operation.turn() instanceof Turn.InvokeAction invoke) {
        for (SyncInvocation call : syncCalls(type, invoke.action(), invoke.params())) {
          pending.add(new TransactionRequest.Operation(call.entity(),
              new Turn.InvokeAction(call.action(), call.arguments())));
        }
      }
    }
    return homes;
  }

  private static List<SyncInvocation> syncCalls(CompiledType type, String action,
      JsonNode params) {
    try {
      return type.synchronizedCalls(action, params);
    } catch (TroupeException refused) {
      // An unknown action or bad arguments: the request fails on its own path, changing nothing.
      return List.of();
    }
  }

  /**
   * The home DC's name of a message's receiver of a strong type; null for a causal one, a reserved
   * or undeclared type, or a home rule that fails for it (the message is then delivered where it
   * is read, and its action refuses it as it would refuse any write: docs/ARCHITECTURE.md, "Causal
   * messages").
   */
  String receiverHome(EntityId receiver) {
    if (dataCentreName.isEmpty() || receiver.type().startsWith("$")) {
      return null;
    }
    try {
      return homeOf(receiver);
    } catch (TroupeException unknownHome) {
      return null;
    }
  }

  /**
   * Whether this DC may be the home of a receiver of a message: some strong type with an action
   * is homed here or by a rule. False on a node without a DC name. When false, no message of
   * another DC's log is this DC's to deliver.
   */
  boolean mayReceiveMessagesHomedHere(Collection<TypeSpec> specs) {
    if (dataCentreName.isEmpty()) {
      return false;
    }
    for (TypeSpec spec : specs) {
      Consistency consistency = spec.consistency();
      if (consistency.strong() && spec.actions() != null && !spec.actions().isEmpty()
          && (consistency.home() == null || consistency.home().equals(dataCentreName))) {
        return true;
      }
    }
    return false;
  }

  /** The home of an entity of a strong type; null for a causal one (or a reserved type). */
  private String homeOf(EntityId entity) {
    return entity.type().startsWith("$")
        ? null : homeOf(entity, typeOf.apply(entity).spec().consistency());
  }

  /**
   * The entity's home under {@code consistency}: the type's, or its rule's for the entity's id.
   *
   * @throws TroupeException {@code invalid_request} when the rule fails or names a DC that is
   *     neither this one nor a peer
   */
  private String homeOf(EntityId entity, Consistency consistency) {
    if (!consistency.strong()) {
      return null;
    }
    if (consistency.home() != null) {
      return consistency.home();
    }
    String home = rules.computeIfAbsent(consistency.homeRule(), HomeRule::compile)
        .homeOf(entity.id());
    if (!home.equals(dataCentreName) && !peerNames.contains(home)) {
      throw TroupeException.invalid("the home rule of type " + entity.type() + " gives '" + home
          + "' for " + entity + ", which is neither this data centre ('" + dataCentreName
          + "') nor one of its peers " + peerNames + "; nothing was done");
    }
    return home;
  }
}
