package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.runtime.cluster.ClusterNode;
import dev.troupe.runtime.messages.MessageDelivery;
import dev.troupe.runtime.messages.MessageSettings;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.time.Clock;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageStatistics;
import dev.troupe.storage.Store;
import dev.troupe.txn.Turn;
import dev.troupe.txn.port.Transport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded Troupe engine: one node's entities, turns and storage behind an asynchronous Java
 * API. The REST server and the tests use exactly this API.
 *
 * <p>Contract: every write method's future completes only after the write is durable (under the
 * default {@code sync} durability) and then reflects it in every later read; it fails with a {@link
 * TroupeException} whose {@link ErrorCode} says what went wrong, and a failed write changed nothing,
 * except {@link ErrorCode#OUTCOME_UNKNOWN}, which says exactly that it may have. Reads of the latest
 * state are served from the object cache without an actor hop.
 *
 * <p>Type definitions are themselves stored as an entity ({@value #SYSTEM_TYPE}/types, one register
 * key per type), so they share the journal's durability and recovery. A redeclaration that would
 * hide stored values is refused unless it names a migration (docs/ARCHITECTURE.md, "Type
 * evolution"); a {@code discard} migration is recorded in the same commit as the definition (key
 * {@value #MIGRATION_KEY_PREFIX}{@code <type>}) and removed once every entity was rewritten, so a
 * crash in between resumes it when the engine opens again, before it serves anything.
 * Redeclarations run one at a time on their own thread (they read and rewrite many entities).
 *
 * <p>Strong types ({@code consistency: strong}, docs/ARCHITECTURE.md, "Strong types with a home
 * DC"): in a named DC every write to an entity of a strong type homed elsewhere fails with {@link
 * dev.troupe.model.NotHomeException} ({@code not_home}, naming the home) having done nothing; with
 * peers, a causal type whose preconditions read keys its actions write is refused at declaration
 * ({@code invalid_request}) and, stored, stops the engine from opening ({@link StrongHomes}).
 *
 * <p>A facade: types live in the {@link TypeRegistry}, reads take the {@link ReadPath}, and every
 * write is a request whose decisions a pure core takes ({@code RequestCore}, run by the {@link
 * RequestShell}; interactive transactions' lifecycle in the {@link InteractiveShell}). Every
 * message to an entity is sent by {@link #route} (straight to an active entity's actor, else
 * through its partition's registry).
 */
public final class Troupe implements AutoCloseable {
  /** Type names starting with '$' are reserved for Troupe's own entities. */
  public static final String SYSTEM_TYPE = "$system";
  /** Keys of the types' entity recording an unfinished migration (see {@link TypeRegistry}). */
  static final String MIGRATION_KEY_PREFIX = TypeRegistry.MIGRATION_KEY_PREFIX;

  private static final Logger log = LoggerFactory.getLogger(Troupe.class);

  private final RuntimeSettings settings;
  private final Store store;
  /**
   * The node's clock, which the store issues every timestamp from (and owns: only the store
   * ticks it). Kept here so that timestamps issued elsewhere (a remote DC's commits, applied
   * here) can be observed: every later local timestamp is above them.
   */
  private final Clock clock;
  private final ActorSystem<Void> system;
  private final List<ActorRef<EntityRegistry.Command>> registries = new ArrayList<>();
  /** Each single-node registry's direct route to its active entities, by partition. */
  private final List<DirectRoutes<ActorRef<EntityActor.Command>>> directRoutes = new ArrayList<>();
  /** The node's answers to participants in doubt (DecisionQueryCore's shell). */
  private final DecisionDirectory decisions;
  /** Carries the messages between the node's cores (see {@link EntityRouter}). */
  private final LocalTransport transport;
  /** This node as a member of a cluster (troupe.cluster.enabled); null on a single node. */
  private final ClusterNode cluster;
  /** Where the transport delivers this node's messages. */
  private final NodeInbox inbox;
  /** This node's turns and steps awaiting an answer through the transport. */
  private final RemoteReplies remoteReplies;
  private final TurnMetrics metrics = new TurnMetrics();
  private final TransactionMetrics transactionMetrics;
  private final AtomicBoolean failed = new AtomicBoolean();
  private final LoudStorageEvents storageEvents = new LoudStorageEvents();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final IdempotencyHandOff idempotency = new IdempotencyHandOff();
  private final TypeRegistry types;
  /** Strong types' homes: what this DC may declare and which writes it runs. */
  private final StrongHomes homes;
  private final ReadPath reads;
  private final EntityListing listing;
  private final RequestShell requests;
  private final InteractiveShell interactive;
  /** The memory budget's shell: actor limits, cache sizes, refusals when the heap is full. */
  private final MemoryWatch memory;

  /** Marks the engine failed, logs, and tells the embedding application (see {@link #reportFatalError}). */
  private final FatalErrorHandler fatalErrors;

  private final MessageSettings messageSettings;
  private MessageDelivery messageDelivery;

  private Troupe(RuntimeSettings settings, FatalErrorHandler fatalErrorHandler) {
    this.settings = settings;
    this.transactionMetrics = new TransactionMetrics(
        new RecentTransactions(RecentTransactions.Settings.fromConfig(settings.config())));
    this.messageSettings = MessageSettings.fromConfig(settings.config().getConfig("troupe"));
    this.clock = RocksStore.defaultClock(settings.storage(), System::currentTimeMillis);
    this.store = StorageBackend.fromConfig(settings.config()).open(settings.storage(), clock);
    store.setEvents(storageEvents);
    this.decisions = new DecisionDirectory(store::decisionRecorded, store::coordinatorEnded);
    storageEvents.useHealth(store::health);
    RenderedStates renderedStates =
        new RenderedStates(settings.memory().initialSplit().renderedMaximumBytes());
    this.types = new TypeRegistry(settings.types(), store, this::runTyped, this::turn,
        settings.cluster().enabled() ? settings.cluster().typesRefreshMillis() : 0);
    this.homes = new StrongHomes(settings.replication(), types::typeOf);
    this.reads = new ReadPath(settings, store, types::typeOf, renderedStates, this::checkOpen);
    this.listing = new EntityListing(store, reads, settings.listing());
    FatalErrorHandler handler = this.fatalErrors = (where, error) -> {
      failed.set(true);
      log.error("fatal error in {}: the engine refuses all further work", where, error);
      fatalErrorHandler.onFatalError(where, error);
    };
    try {
      int nodeId = settings.storage().nodeId();
      this.system = ActorSystem.create(Behaviors.empty(), "troupe", settings.cluster().enabled()
          ? ClusterNode.actorSystemConfig(settings.cluster(), nodeId,
              ClusterMembers.coordinatorEpoch(store, settings.storage().partitionOwnership()),
              settings.config())
          : settings.config());
      PekkoTimers timers = new PekkoTimers(system);
      this.remoteReplies =
          new RemoteReplies(settings.transport().maxPendingReplies(), timers,
              store.locator()::partitionOf, store.locator().partitions(),
              settings.transport().rehomingWaitMillis(),
              settings.transport().rehomingProbeIntervalMillis(),
              settings.transport().readResendMillis(),
              settings.transport().maxReroutes());
      this.inbox =
          new NodeInbox(decisions, this::route, types, remoteReplies, reads, store);
      this.transport = new LocalTransport(nodeId, store.locator(),
          settings.transport().encodeLocalMessages(), inbox);
      // In a cluster, sharding places the partitions: each one's registry runs under its host,
      // on one member, and the cluster transport carries what goes to another member.
      ClusterNode member = settings.cluster().enabled()
          ? ClusterNode.create(system, settings.cluster(), nodeId,
              settings.storage().partitions(), store.locator(), inbox::receive, () -> {
                if (!closed.get()) {
                  handler.onFatalError("cluster membership", new IllegalStateException(
                      "this node is no longer a member of the cluster (removed, downed, or its"
                          + " node id is another member's); restart it to rejoin"));
                }
              }, ClusterNode.LocalNumbers.of(metrics::activeEntities,
                  () -> store.statistics().cacheWeightBytes()))
          : null;
      this.cluster = member;
      if (member != null) {
        member.watchMembers(remoteReplies.verdictListener());
      }
      Transport between = member != null ? member.transport() : transport;
      // One node hosts every entity its locator places here; a cluster member, the entities of
      // the partitions whose hosts run here (acquired in the store, registry running).
      java.util.function.Predicate<EntityId> hostedHere = member != null
          ? entity -> member.hosted().hosts(store.locator().partitionOf(entity))
          : entity -> store.locator().nodeOf(entity) == transport.localNode();
      EntityRouter router = new EntityRouter(this::route, hostedHere, between,
          settings, types, remoteReplies, store, system);
      reads.useRemote(new RemoteReads(between, remoteReplies, router::isHere,
          router.remoteTimeoutMillis()));
      int partitions = settings.storage().partitions();
      int maxActivePerRegistry =
          Math.max(1, settings.memory().initialSplit().actorLimit() / partitions);
      if (member != null) {
        member.startSharding(
            new StorePartitionOwner(store, settings.storage().partitionOwnership(),
                storageEvents, RequestShell.redo(types::typeOf, settings), nodeId, decisions,
                this::adoptRecovered),
            () -> EntityRegistry.create(store,
            settings, maxActivePerRegistry, handler, metrics, transactionMetrics, timers,
            between));
        system.getWhenTerminated().thenRun(() -> {
          if (!closed.get()) {
            handler.onFatalError("cluster membership", new IllegalStateException(
                "the actor system stopped: this node was removed from the cluster (downed by"
                    + " the split brain resolver, or it left); restart it to rejoin"));
          }
        });
      } else {
        for (int partition = 0; partition < partitions; partition++) {
          DirectRoutes<ActorRef<EntityActor.Command>> direct = new DirectRoutes<>();
          directRoutes.add(direct);
          registries.add(system.systemActorOf(
              EntityRegistry.create(store, settings, maxActivePerRegistry, handler, metrics,
                  transactionMetrics, timers, transport, direct),
              "partition-" + partition, Props.empty()));
        }
      }
      this.requests = new RequestShell(settings, store, system, timers, router,
          types::typeOf, metrics, transactionMetrics, decisions);
      this.interactive = new InteractiveShell(settings.transactions(), store, timers,
          router, transactionMetrics, requests);
      types.loadTypes();
      // A DC given peers after declaring a causal type with unsafe preconditions does not start.
      homes.checkStored(types.types());
      // Before any turn runs: what a crash left prepared is committed or aborted.
      // A part whose coordinator is on another node stays in doubt and asks it (RecoveredParts).
      adoptRecovered(RequestShell.resolveInDoubtTransactions(store, types::typeOf, settings,
          transactionMetrics));
      this.memory = new MemoryWatch(settings.memory(), store, renderedStates,
          cluster != null ? cluster.hosted()::registries : () -> registries, metrics);
      reads.useMemory(memory);
      types.resumePendingMigrations();
      // Last: deliveries run turns, so everything above must be ready.
      // Not in a cluster (issue 18): delivery reads this node's own replication log, which in a
      // cluster holds only part of the data centre's messages; delivery across nodes is not built.
      this.messageDelivery =
          cluster == null ? MessageDelivery.start(this, messageSettings) : null;
    } catch (RuntimeException e) {
      types.close();
      reads.shutdownNow();
      store.close();
      throw e;
    }
  }

  /** Opens (creating or recovering) the engine; invariant violations are logged and stop work. */
  public static Troupe open(RuntimeSettings settings) {
    return new Troupe(settings, (where, error) -> {});
  }

  /** Opens the engine with a handler for fatal errors (the server halts the process). */
  public static Troupe open(RuntimeSettings settings, FatalErrorHandler fatalErrorHandler) {
    return new Troupe(settings, fatalErrorHandler);
  }

  /**
   * For the engine's own shells outside this package (the replication shell): a violated
   * invariant there is a bug like one in an entity, so the engine refuses all further work and the
   * embedding application's {@link FatalErrorHandler} decides (the server halts the process).
   */
  public void reportFatalError(String where, Throwable error) {
    fatalErrors.onFatalError(where, error);
  }

  public RuntimeSettings settings() {
    return settings;
  }

  /** A turn on an entity of a given type, the reserved types' included (the types' entity). */
  private CompletableFuture<TurnOutcome> runTyped(EntityId entity, CompiledType type, Turn turn) {
    return requests.run(entity, type, turn);
  }

  /**
   * An entity's partition registry (its cluster host's in a cluster). Messages to entities go
   * through {@link #route}, never told to the registry directly: on a single node the registry's
   * {@link DirectRoutes} must count every message sent through it.
   */
  private ActorRef<EntityRegistry.Command> registryOf(EntityId entity) {
    if (cluster != null) {
      return cluster.hosted().registryOf(store.locator().partitionOf(entity));
    }
    return registries.get(store.locator().partitionOf(entity));
  }

  /** Messages told straight to an active entity's actor so far (single node; tests). */
  long directSends() {
    return directRoutes.stream().mapToLong(DirectRoutes::directSends).sum();
  }

  /**
   * Sends a message to an entity this node hosts (see {@link EntityRoutes}): on a single node
   * through its partition's {@link DirectRoutes} (straight to the actor of an active entity, else
   * through the registry); in a cluster through the registry under the partition's host.
   */
  private void route(EntityId entity, EntityActor.Routed message) {
    if (cluster != null) {
      registryOf(entity).tell(new EntityRegistry.Route(entity, message));
      return;
    }
    int partition = store.locator().partitionOf(entity);
    ActorRef<EntityRegistry.Command> registry = registries.get(partition);
    directRoutes.get(partition).send(entity, message, ActorRef::tell,
        routed -> registry.tell(new EntityRegistry.Route(entity, routed)));
  }

  // ---------------------------------------------------------------- types

  /**
   * Declares or redeclares a type without a migration: a redeclaration that would hide stored
   * values fails with {@code incompatible_type}. See {@link #defineType(TypeSpec,
   * TypeEvolution.Migration)}.
   */
  public CompletableFuture<TypeSpec> defineType(TypeSpec spec) {
    return defineType(spec, TypeEvolution.Migration.NONE);
  }

  /**
   * Declares or redeclares a type (docs/ARCHITECTURE.md, "Type evolution"). The type's entities
   * are read to learn which keys hold values (at most {@code troupe.types.max-entities-checked};
   * past it every key the redeclaration stops showing is taken to hold values). A redeclaration
   * that would hide a stored value the current declaration shows fails with {@code
   * incompatible_type} naming each such key, and changes nothing, unless {@code migration} is
   * {@link TypeEvolution.Migration#DISCARD}: then the definition and a record of the migration
   * commit together, every entity of the type is rewritten without the values the new declaration
   * does not show, and the record is removed. The future completes once all of that is durable;
   * if a rewrite fails, it fails with that error and the migration resumes when the engine opens
   * again (or when the same declaration is put again with the migration).
   */
  public CompletableFuture<TypeSpec> defineType(TypeSpec spec, TypeEvolution.Migration migration) {
    try {
      homes.checkDeclaration(spec);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    for (var action : spec.actions().values()) {
      if (action.send().size() > messageSettings.maxPerTurn()) {
        return CompletableFuture.failedFuture(TroupeException.invalid(action.path()
            + ".send: " + action.send().size() + " messages, more than troupe.messages"
            + ".max-per-turn (" + messageSettings.maxPerTurn() + ")"));
      }
    }
    return types.define(spec, migration, this::checkOpen);
  }

  public Optional<TypeSpec> type(String name) {
    return types.type(name);
  }

  public List<TypeSpec> types() {
    return types.listedTypes();
  }

  // ---------------------------------------------------------------- reads

  /** The latest committed state; fails with {@code not_found} if the entity does not exist. */
  public CompletableFuture<EntityView> get(EntityId entity) {
    return reads.get(entity);
  }

  /**
   * The keys {@code projection} names of the latest committed state and its version: one committed
   * state, rendering only those keys, each as {@link StateProjection} describes (reading two members
   * of a family of hundreds costs two). Fails with {@code not_found} if the entity does not exist,
   * and with {@code invalid_request}, before reading, if the projection names a key that is no part
   * of the entity's declared type.
   */
  public CompletableFuture<EntityView> get(EntityId entity,
      dev.troupe.model.spec.StateProjection projection) {
    return checkedProjection(entity, projection, () -> reads.get(entity, projection));
  }

  /**
   * The latest committed state as JSON bytes (the object {@link #get} returns as {@code state}) and
   * its version; fails with {@code not_found} if the entity does not exist. A hot entity is
   * rendered once per version. The bytes must not be modified.
   */
  public CompletableFuture<RenderedEntity> getRendered(EntityId entity) {
    return reads.getRendered(entity);
  }

  /**
   * The keys {@code projection} names of the latest committed state, as JSON bytes, and its
   * version: one committed state, rendering only those keys ({@link StateProjection}); fails with
   * {@code not_found} if the entity does not exist, and with {@code invalid_request}, before
   * reading, if the projection names a key that is no part of the entity's declared type.
   */
  public CompletableFuture<RenderedEntity> getRendered(EntityId entity,
      dev.troupe.model.spec.StateProjection projection) {
    return checkedProjection(entity, projection, () -> reads.getProjected(entity, projection));
  }

  /**
   * {@code read}, once {@code projection} names only keys of the entity's declared type; refused
   * with {@code invalid_request} otherwise, before anything is read.
   */
  private <T> CompletableFuture<T> checkedProjection(EntityId entity,
      dev.troupe.model.spec.StateProjection projection,
      java.util.function.Supplier<CompletableFuture<T>> read) {
    try {
      type(entity.type()).ifPresent(projection::checkAgainst);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return read.get();
  }

  /** An entity's state as JSON bytes, and its version. */
  public record RenderedEntity(EntityId entity, byte[] stateJson, long version) {}

  /** One key's latest value (its default for a declared key never written). */
  public CompletableFuture<JsonNode> getKey(EntityId entity, String key) {
    return reads.getKey(entity, key);
  }

  /**
   * The entity as of a commit timestamp (multi-version read from checkpoint plus journal). Fails
   * with {@code history_truncated} below the retained history, {@code not_found} if the entity did
   * not exist then.
   */
  public CompletableFuture<EntityView> readAt(EntityId entity, long timestamp) {
    return reads.readAt(entity, timestamp);
  }

  /** {@link #readAt(EntityId, long)} rendering only the keys {@code projection} names. */
  public CompletableFuture<EntityView> readAt(EntityId entity, long timestamp,
      dev.troupe.model.spec.StateProjection projection) {
    return reads.readAt(entity, timestamp, projection);
  }

  /**
   * A page of the entities of {@code type} that exist (latest, or as of version {@code at}), in
   * id order, from the id {@code startId} (included with {@code includeStart}, else after it;
   * null: from the first), at most {@code limit}, with their states when {@code withStates}; see
   * {@link EntityListing}.
   */
  public CompletableFuture<EntityListing.Page> listEntities(String type, String startId,
      boolean includeStart, int limit, java.util.OptionalLong at, boolean withStates) {
    return listing.page(type, startId, includeStart, limit, at, withStates);
  }

  /**
   * The versions of {@code entity} still in the journal, newest first, below {@code before}
   * (null: from the newest), at most {@code limit} ({@link Store#versions}): each a version a read
   * {@code at} it answers. Read on the storage pool, never on the caller's thread.
   */
  public CompletableFuture<List<Long>> versions(EntityId entity, Long before, int limit) {
    return reads.onStoragePool(() -> store.versions(entity, before, limit));
  }

  /** The outcomes of the last transactions this node coordinated, in a bounded ring. */
  public RecentTransactions recentTransactions() {
    return transactionMetrics.recent();
  }

  /** The greatest commit timestamp issued so far: a read at it sees every acknowledged write. */
  public long currentTimestamp() {
    return store.currentTimestamp();
  }

  /**
   * Observes a timestamp issued elsewhere (a remote DC's commit, about to be applied here): every
   * later timestamp this node issues, commit timestamps included, is greater. So a local write
   * that may have seen a remote one is ordered after it everywhere, last writer wins included.
   */
  public void observeTimestamp(long timestamp) {
    clock.advancePast(timestamp);
  }

  /**
   * Whether a turn run so far may have sent a causal message: false until a type whose actions
   * send messages is declared here (or loaded, or applied from another DC), then true for good.
   * The message delivery reads the log only when true: a node that sends none pays nothing.
   */
  public boolean mayHaveSentMessages() {
    return types.mayHaveSentMessages();
  }

  /**
   * The home DC's name of a message's receiver of a strong type, or null (causal, undeclared,
   * reserved, a failing home rule, or a node without a DC name): see {@link MessageDelivery}.
   */
  public String receiverHome(EntityId receiver) {
    return homes.receiverHome(receiver);
  }

  /**
   * Whether some strong type with actions may be homed at this DC: only then may another DC's log
   * hold a message this DC delivers. Read after the applied vector it is used with (a message
   * applied here was sent after its receiver's type was declared, and the declaration is applied
   * here first).
   */
  public boolean mayReceiveMessagesHomedHere() {
    return homes.mayReceiveMessagesHomedHere(types.types());
  }

  // ---------------------------------------------------------------- writes

  public CompletableFuture<TurnOutcome> assign(EntityId entity, String key, JsonNode value) {
    return turn(entity, new Turn.AssignKeys(Map.of(key, value)));
  }

  /** Assigns several register keys atomically. */
  public CompletableFuture<TurnOutcome> patch(EntityId entity, Map<String, JsonNode> assignments) {
    return turn(entity, new Turn.AssignKeys(assignments));
  }

  public CompletableFuture<TurnOutcome> deleteKey(EntityId entity, String key) {
    return turn(entity, new Turn.DeleteKey(key));
  }

  public CompletableFuture<TurnOutcome> delete(EntityId entity) {
    return turn(entity, new Turn.DeleteEntity());
  }

  public CompletableFuture<TurnOutcome> increment(EntityId entity, String key, long by) {
    return turn(entity, new Turn.IncrementKey(key, by));
  }

  public CompletableFuture<TurnOutcome> add(EntityId entity, String key, JsonNode element) {
    return turn(entity, new Turn.AddElement(key, element));
  }

  public CompletableFuture<TurnOutcome> remove(EntityId entity, String key, JsonNode element) {
    return turn(entity, new Turn.RemoveElement(key, element));
  }

  /** Invokes a declared action; a false precondition fails with {@code precondition_failed}. */
  public CompletableFuture<TurnOutcome> invoke(EntityId entity, String action, JsonNode params) {
    return turn(entity, new Turn.InvokeAction(action, params));
  }

  /**
   * Runs one turn on one entity. An action with {@code sync} calls runs as a transaction with the
   * entities it calls (all or nothing); its answer is the invoked entity's, and a failed
   * precondition on any of them fails it with {@code precondition_failed}.
   */
  public CompletableFuture<TurnOutcome> turn(EntityId entity, Turn turn) {
    try {
      homes.checkTurn(entity, turn);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    IdempotencyRecord idempotency = claimIdempotency();
    return admitted(() -> requests.turn(entity, turn, idempotency));
  }

  // ---------------------------------------------------------------- replica applications

  /**
   * Applies one entity's part of a remote DC's single-entity transaction ({@link
   * Turn.ApplyReplicated}; docs/ARCHITECTURE.md, "Several data centres"). Unlike {@link #turn}, the
   * entity's type is not checked (reserved types included: a remote DC's own entities are applied
   * like any other) and no idempotency record is taken (the turn's marker makes a second
   * application a no-op). Fails like {@link #turn} (unavailable, overloaded: the caller retries).
   */
  public CompletableFuture<TurnOutcome> applyReplicated(EntityId entity,
      Turn.ApplyReplicated turn) {
    CompletableFuture<TurnOutcome> applied =
        admitted(() -> requests.run(entity, replicaTypeOf(entity), turn));
    if (!types.holdsDefinitions(entity)) {
      return applied;
    }
    // Another DC declared or redeclared types: this DC serves them from now on, not only after
    // a restart (a type definition travels like any write to the types' entity).
    return applied.thenApply(outcome -> {
      types.loadReplicatedDefinitions();
      return outcome;
    });
  }

  /**
   * Applies a remote DC's multi-entity transaction atomically: one dynamic transaction of one
   * {@link Turn.ApplyReplicated} per participant, whose commit decision is flagged as a replica
   * application (the store does not ship it again as a local transaction). Types as in {@link
   * #applyReplicated(EntityId, Turn.ApplyReplicated)}; not held to {@code max-operations} and
   * {@code max-participants} (the origin's bounds held it, its dependencies' followers included,
   * and a refusal here would repeat at every retry).
   */
  public CompletableFuture<TransactionOutcome> applyReplicated(
      Map<EntityId, Turn.ApplyReplicated> parts) {
    List<TransactionRequest.Operation> operations = new ArrayList<>();
    parts.forEach((entity, turn) -> operations.add(new TransactionRequest.Operation(entity, turn)));
    TransactionRequest request =
        new TransactionRequest(operations, List.of(), TransactionRequest.Mode.DYNAMIC);
    CompletableFuture<TransactionOutcome> applied =
        admitted(() -> requests.transactReplicated(request, this::replicaTypeOf));
    if (parts.keySet().stream().noneMatch(types::holdsDefinitions)) {
      return applied;
    }
    // A batched application may carry a type definition among other entities' writes.
    return applied.thenApply(outcome -> {
      types.loadReplicatedDefinitions();
      return outcome;
    });
  }

  /**
   * Delivers one causal message sent from this data centre ({@link Turn.DeliverMessage};
   * docs/ARCHITECTURE.md, "Causal messages"): the receiving action with the receiver's delivered
   * marker, as one turn. No idempotency record (the marker makes a second delivery a no-op).
   * Completes with the outcome the marker records ({@link
   * dev.troupe.model.causal.Messages#DELIVERED} or the error code that consumed the message), or
   * null when the turn wrote nothing (delivered before); fails like {@link #turn} when the turn
   * could not run, and, for an action with sync calls (run as a transaction), with the action's
   * error: the caller ({@link MessageDelivery}) retries or consumes the message.
   */
  public CompletableFuture<String> deliverMessage(EntityId receiver, Turn.DeliverMessage turn) {
    try {
      // The receiving action's sync calls must not write a strong entity homed elsewhere.
      homes.checkTurn(receiver, new Turn.InvokeAction(turn.action(), turn.args()));
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return admitted(() -> requests.run(receiver, types.typeOf(receiver), turn))
        .thenApply(outcome -> {
          if (!outcome.changed()) {
            return null;
          }
          var marker = outcome.rawState().get(dev.troupe.model.causal.Messages.deliveredMarkerKey(
              turn.markerOrigin(settings.storage().dataCentreId())));
          return marker instanceof dev.troupe.model.value.RegisterValue register
              ? dev.troupe.model.causal.Messages.outcome(register.value()) : null;
        });
  }

  /**
   * This node's delivery of causal messages (its counters, for metrics); null on a cluster member,
   * which delivers none.
   */
  public MessageDelivery messageDelivery() {
    return messageDelivery;
  }

  /** The type a replica application runs with: the declared one, schemaless for reserved ones. */
  private CompiledType replicaTypeOf(EntityId entity) {
    return entity.type().startsWith("$")
        ? CompiledType.schemaless(entity.type()) : types.typeOf(entity);
  }

  // ---------------------------------------------------------------- idempotent writes

  /**
   * Starts a write ({@code write} must call one write entry point synchronously) whose commit also
   * records {@code record} durably, in the same atomic write (a single turn's journal record or
   * a transaction's commit decision). Returns whether a write entry point took the record: false
   * when {@code write} refused before reaching one (nothing changed, nothing recorded).
   */
  public boolean idempotently(IdempotencyRecord record, Runnable write) {
    return idempotency.idempotently(record, write);
  }

  private IdempotencyRecord claimIdempotency() {
    return idempotency.claim();
  }

  /** The store's durable record of an idempotency key, if any. */
  public Optional<IdempotencyRecord> idempotencyRecord(String qualifiedKey) {
    return store.idempotencyRecord(qualifiedKey);
  }

  /** Stores first attempts' answers in their records ({@link Store#recordIdempotencyAnswers}). */
  public void recordIdempotencyAnswers(List<IdempotencyRecord> records) {
    store.recordIdempotencyAnswers(records);
  }

  public List<IdempotencyRecord> idempotencyRecords() {
    return store.idempotencyRecords();
  }

  public CompletableFuture<Void> forgetIdempotencyRecord(String qualifiedKey) {
    return store.forgetIdempotencyRecord(qualifiedKey);
  }

  /**
   * Whether a write with this key may still commit here: a turn not yet answered by its entity, or
   * a transaction whose coordinator has not finished, also after its caller gave up waiting
   * ({@code outcome_unknown}). A retry meanwhile must not run it a second time.
   */
  public boolean idempotentWriteRunning(String qualifiedKey) {
    return requests.idempotentTransactionRunning(qualifiedKey)
        || store.idempotencyAttached(qualifiedKey);
  }

  // ---------------------------------------------------------------- transactions

  /**
   * Runs a static multi-entity transaction (strict two-phase locking with wait-die, then
   * two-phase commit). Fails with {@code aborted} (and a reason) when it changed nothing, with
   * {@code outcome_unknown} only when its outcome cannot be known, and with {@code
   * invalid_request}, {@code unknown_type} or {@code unknown_action} for a malformed request.
   */
  public CompletableFuture<TransactionOutcome> transact(TransactionRequest request) {
    try {
      homes.checkTransaction(request);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    IdempotencyRecord idempotency = claimIdempotency();
    return admitted(() -> requests.transact(request, idempotency));
  }

  public TransactionMetrics transactionMetrics() {
    return transactionMetrics;
  }

  // ------------------------------------------------------------ dependencies

  /**
   * Registers a dependency (smsa.txt §2.3.5) in a transaction of its own: the leader records it
   * (its key must hold a value), the follower records it and takes the leader's value through the
   * dependency's function, and a walk along the dependencies of its kind refuses an update cycle
   * ({@code conflict}) or a chain longer than {@code troupe.dependencies.max-chain-length} ({@code
   * too_large}). Because it is a transaction, a concurrent change of the leader is ordered before
   * (and its value taken) or after (and forwarded): the follower never misses it (smsa.txt §3.1).
   * Fails with {@code conflict} if the dependency exists; changes nothing when it fails.
   */
  public CompletableFuture<TransactionOutcome> registerDependency(Dependency dependency) {
    try {
      checkOpen();
      // Reserved types are refused here; the rest is checked where the parts evaluate.
      types.typeOf(dependency.leader().entity());
      types.typeOf(dependency.follower().entity());
      homes.checkDependency(dependency.leader().entity(), dependency.follower().entity());
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return transact(new TransactionRequest(List.of(new TransactionRequest.Operation(
        dependency.leader().entity(), new Turn.RegisterDependency(dependency))), List.of(),
        TransactionRequest.Mode.DYNAMIC));
  }

  /**
   * Deregisters a dependency by id, in a transaction with its leader and follower (the follower's
   * value stays; an aggregate drops the leader's contribution). {@code not_found} if it is not
   * registered; {@code invalid_request} for text that is not a dependency id.
   */
  public CompletableFuture<TransactionOutcome> deregisterDependency(String id) {
    Dependency.Ends ends;
    try {
      checkOpen();
      ends = Dependency.parseId(id);
      types.typeOf(ends.leader().entity());
      homes.checkDependency(ends.leader().entity(), ends.follower().entity());
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return transact(new TransactionRequest(List.of(new TransactionRequest.Operation(
        ends.leader().entity(), new Turn.DeregisterDependency(id, ends.leader().key()))),
        List.of(), TransactionRequest.Mode.DYNAMIC));
  }

  /** A registered dependency by id, as its leader records it; {@code not_found} if none. */
  public CompletableFuture<Dependency> dependency(String id) {
    return reads.dependency(id);
  }

  /**
   * An entity's dependencies in both directions, each list in id order: those its keys lead and
   * those its keys follow (with each leader's last forwarded value, for aggregates).
   */
  public CompletableFuture<EntityDependencies> dependencies(EntityId entity) {
    return reads.dependencies(entity);
  }

  /** An entity's dependencies, as of {@code version}. */
  public record EntityDependencies(EntityId entity, List<Dependency> leads,
      List<DependencyTable.Entry> follows, long version) {}

  // ------------------------------------------------------------ interactive transactions

  /**
   * Begins an interactive transaction: its steps take locks as they go (strict two-phase locking
   * with wait-die, serial and keys policies), see their own writes, and apply nothing until
   * {@link #commitInteractive}. Aborted after {@code interactive-idle-timeout-millis} without a
   * request. Returns its id.
   */
  public long beginInteractive() {
    checkOpen();
    memory.refuseIfShort();
    return interactive.begin();
  }

  /** Reads an entity's whole state inside an interactive transaction (its own writes included). */
  public CompletableFuture<EntityView> readInteractive(long transactionId, EntityId entity) {
    return stepInteractive(transactionId, entity, null);
  }

  /**
   * Runs one operation inside an interactive transaction and answers with the entity's state as
   * the transaction sees it. A failed operation changes nothing and leaves the transaction open;
   * a lock conflict with an older transaction aborts it ({@code aborted}, {@code lock_conflict}).
   */
  public CompletableFuture<EntityView> stepInteractive(long transactionId, EntityId entity,
      Turn turn) {
    try {
      homes.checkInteractiveStep(entity, turn);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return admitted(() -> interactive.step(transactionId, entity, turn));
  }

  /** Commits an interactive transaction (two-phase commit over what it touched). */
  public CompletableFuture<TransactionOutcome> commitInteractive(long transactionId) {
    try {
      checkOpen();
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return interactive.commit(transactionId, claimIdempotency());
  }

  /** Aborts an interactive transaction: nothing it did is applied; its locks are released. */
  public void abortInteractive(long transactionId) {
    interactive.abort(transactionId);
  }

  /** Whether an interactive transaction with this id is open (for tests and metrics). */
  public boolean isInteractiveOpen(long transactionId) {
    return interactive.isOpen(transactionId);
  }

  // ---------------------------------------------------------------- operations

  public StorageStatistics storageStatistics() {
    return store.statistics();
  }

  /** Where commits' time goes on the storage writers, since the store opened (for /metrics). */
  public dev.troupe.storage.WriterTimings.Snapshot writerTimings() {
    return store.writerTimings().snapshot();
  }

  /**
   * Whether this node should receive traffic (readiness), with the reasons it should not: the
   * store failed (it refuses every write until the node restarts), stored data failed its
   * integrity check (an operator must check and repair it, docs/OPERATIONS.md), the engine stopped
   * after an internal error, or it is closed. A node that is not ready may still answer what it
   * safely can (reads of intact entities).
   */
  public NodeHealth health() {
    return NodeHealth.of(closed.get(), failed.get(), store.health());
  }

  /**
   * Registers what to do once the store fails (the server stops the process when configured to,
   * so that a supervisor restarts it); called at most once, on the thread that met the failure,
   * after it was logged. Called at once if the store failed already.
   */
  public void onStorageFailure(Consumer<Throwable> listener) {
    storageEvents.onStorageFailure(listener);
  }

  public TurnMetrics turnMetrics() {
    return metrics;
  }

  /** The memory budget and what it holds now; refusals for memory since start. */
  public MemoryStatus memoryStatus() {
    return memory.status();
  }

  /** Runs a checkpoint round and journal truncation now (operators, tests, benchmarks). */
  public void checkpointNow() {
    store.checkpointNow();
  }

  /** The actor system the engine runs on; the HTTP server binds on it too. */
  public ActorSystem<Void> actorSystem() {
    return system;
  }

  /** The node's transport between cores (its counters, for metrics: delivered, dropped). */
  public LocalTransport transport() {
    return transport;
  }

  /** This node as a member of a cluster; empty on a single node (troupe.cluster.enabled off). */
  public Optional<ClusterNode> cluster() {
    return Optional.ofNullable(cluster);
  }

  /**
   * After a recovery of this node's partitions (at start, or when the node acquires a partition
   * in a DC of several nodes): hands the parts it kept in doubt to their entities, which ask their
   * coordinators' nodes, and mirrors the decisions it kept ({@link RecoveredParts}). Call before
   * anything else reaches those entities.
   */
  public void adoptRecovered(dev.troupe.storage.InDoubtResolution resolution) {
    RecoveredParts.adopt(resolution, this::replicaTypeOf, this::route, decisions);
  }

  /** Turns, steps and reads awaiting an answer through the transport (counters, for metrics). */
  public RemoteReplies remoteReplies() {
    return remoteReplies;
  }

  /** Where the transport delivers this node's messages (answers to finished coordinators). */
  NodeInbox inbox() {
    return inbox;
  }

  /**
   * The type an entity is rendered with now (its declared one, or a schemaless one), or empty for
   * Troupe's own reserved types: for parts of the server that show states outside the REST API
   * (the system-of-record exporter).
   */
  public Optional<dev.troupe.model.spec.CompiledType> typeForExport(EntityId entity) {
    if (entity.type().startsWith("$")) {
      return Optional.empty();
    }
    return Optional.of(types.typeOf(entity));
  }

  /** The storage engine, for tools in this JVM that need it (benchmarks, recovery checks). */
  public Store store() {
    return store;
  }

  /** Starts a write if the engine is open and the heap has room; else fails with why not. */
  private <T> CompletableFuture<T> admitted(Supplier<CompletableFuture<T>> write) {
    try {
      checkOpen();
      memory.refuseIfShort();
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return write.get();
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new TroupeException(ErrorCode.UNAVAILABLE, "the engine is closed");
    }
    if (failed.get()) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "the engine stopped after an internal error; see the log");
    }
  }

  /** Stops the actors and closes storage; writes already acknowledged are durable. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (messageDelivery != null) {
      messageDelivery.close();
    }
    memory.close();
    types.close();
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      log.warn("actor system did not terminate cleanly", e);
    }
    reads.shutdown();
    store.close();
  }
}
