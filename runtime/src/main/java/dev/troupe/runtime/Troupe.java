package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.Value;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageEvents;
import dev.troupe.storage.StoreHealth;
import dev.troupe.storage.StorageStatistics;
import dev.troupe.storage.Store;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.SyncInvocation;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.txn.CoordinatorCore;
import dev.troupe.txn.DependencyPlanner;
import dev.troupe.txn.InteractiveCore;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import java.util.LinkedHashMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
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
 */
public final class Troupe implements AutoCloseable {
  /** Type names starting with '$' are reserved for Troupe's own entities. */
  public static final String SYSTEM_TYPE = "$system";

  private static final Logger log = LoggerFactory.getLogger(Troupe.class);
  private static final EntityId TYPES_ENTITY = new EntityId(SYSTEM_TYPE, "types");
  /**
   * Keys of {@link #TYPES_ENTITY} recording an unfinished migration: a type name never contains
   * '/', so they never clash with a type's key.
   */
  static final String MIGRATION_KEY_PREFIX = "migration/";
  /** The format of a migration record: {@code {"migration": "discard", "recordVersion": 1}}. */
  private static final int MIGRATION_RECORD_VERSION = 1;
  /** How often a migration tries one entity's rewrite that met a transient refusal. */
  private static final int MIGRATION_ATTEMPTS_PER_ENTITY = 20;
  private static final long MIGRATION_RETRY_PAUSE_MILLIS = 50;

  private final RuntimeSettings settings;
  private final Store store;
  private final ActorSystem<Void> system;
  private final List<ActorRef<EntityRegistry.Command>> registries = new ArrayList<>();
  /** Declared types with the version of the definition they were compiled from. */
  private final Map<String, Declared> declaredTypes = new ConcurrentHashMap<>();
  /** Types whose discard migration was recorded but has not finished. */
  private final java.util.Set<String> pendingMigrations = ConcurrentHashMap.newKeySet();
  /** Runs redeclarations one at a time; its queue is bounded by a setting. */
  private final java.util.concurrent.ExecutorService typeExecutor;
  private final TurnMetrics metrics = new TurnMetrics();
  private final TransactionMetrics transactionMetrics = new TransactionMetrics();
  private final CoordinatorCore.Limits coordinatorLimitsWithoutRetries;
  private final CoordinatorCore.Limits coordinatorLimits;
  private final Duration turnTimeout;
  private final AtomicBoolean failed = new AtomicBoolean();
  /** Told once when the store fails (the server may stop the process); set by the embedder. */
  private volatile Consumer<Throwable> storageFailureListener;
  /** Physical time of the last corruption logged, to log a burst of damaged reads once a second. */
  private final AtomicLong lastCorruptionLoggedMillis = new AtomicLong();
  private final LoudStorageEvents storageEvents = new LoudStorageEvents();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final java.util.concurrent.ExecutorService materializationExecutor;
  private final RenderedStates renderedStates;
  /** The memory budget's shell: actor limits, cache sizes, refusals when the heap is full. */
  private final MemoryWatch memory;

  private Troupe(RuntimeSettings settings, FatalErrorHandler fatalErrorHandler) {
    this.settings = settings;
    this.turnTimeout = Duration.ofMillis(settings.turnTimeoutMillis());
    this.store = RocksStore.open(settings.storage(), System::currentTimeMillis);
    store.setEvents(storageEvents);
    RuntimeSettings.TransactionSettings transactions = settings.transactions();
    this.coordinatorLimits = new CoordinatorCore.Limits(
        transactions.prepareTimeoutMillis(),
        transactions.maxLockConflictRetries(),
        transactions.retryBackoffMillis(),
        Math.max(transactions.maxParticipants(), transactions.maxParticipantsWithFollowers()),
        transactions.maxForwardRounds(),
        settings.turnLimits().maxDependencyChain());
    // Never retried: planned transactions never die in a lock table, and an interactive one's
    // commit already holds its locks (a conflict during its steps ends it instead).
    this.coordinatorLimitsWithoutRetries = new CoordinatorCore.Limits(
        coordinatorLimits.prepareTimeoutMillis(), 0, coordinatorLimits.retryBackoffMillis(),
        coordinatorLimits.maxParticipants(), coordinatorLimits.maxForwardRounds(),
        coordinatorLimits.maxDependencyChain());
    this.interactive = new InteractiveCore(new InteractiveCore.Limits(
        settings.transactions().maxInteractiveTransactions(),
        settings.transactions().maxParticipants(),
        settings.transactions().interactiveIdleTimeoutMillis()));
    this.renderedStates =
        new RenderedStates(settings.memory().initialSplit().renderedMaximumBytes());
    this.typeExecutor = new java.util.concurrent.ThreadPoolExecutor(1, 1, 0,
        java.util.concurrent.TimeUnit.MILLISECONDS,
        new java.util.concurrent.ArrayBlockingQueue<>(settings.types().maxQueuedRedeclarations()),
        Thread.ofPlatform().name("troupe-types").daemon(true).factory());
    this.materializationExecutor = new java.util.concurrent.ThreadPoolExecutor(
        settings.materializationThreads(), settings.materializationThreads(), 0,
        java.util.concurrent.TimeUnit.MILLISECONDS,
        new java.util.concurrent.ArrayBlockingQueue<>(settings.materializationQueueLimit()),
        Thread.ofPlatform().name("troupe-materialize-", 0).daemon(true).factory());
    FatalErrorHandler handler = (where, error) -> {
      failed.set(true);
      log.error("fatal error in {}: the engine refuses all further work", where, error);
      fatalErrorHandler.onFatalError(where, error);
    };
    try {
      this.system = ActorSystem.create(Behaviors.empty(), "troupe", settings.config());
      int partitions = settings.storage().partitions();
      int maxActivePerRegistry =
          Math.max(1, settings.memory().initialSplit().actorLimit() / partitions);
      for (int partition = 0; partition < partitions; partition++) {
        registries.add(system.systemActorOf(
            EntityRegistry.create(store, settings, maxActivePerRegistry, handler, metrics,
                transactionMetrics),
            "partition-" + partition, Props.empty()));
      }
      loadTypes();
      resolveInDoubtTransactions();
      this.memory = new MemoryWatch(settings.memory(), store, renderedStates, registries, metrics);
      resumePendingMigrations();
    } catch (RuntimeException e) {
      typeExecutor.shutdownNow();
      materializationExecutor.shutdownNow();
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

  public RuntimeSettings settings() {
    return settings;
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
    if (spec.name().startsWith("$")) {
      return CompletableFuture.failedFuture(TroupeException.invalid(
          "type names starting with '$' are reserved: " + spec.name()));
    }
    CompiledType compiled;
    try {
      checkOpen();
      compiled = CompiledType.compile(spec);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    try {
      return CompletableFuture.supplyAsync(() -> redeclare(compiled, migration), typeExecutor);
    } catch (java.util.concurrent.RejectedExecutionException busy) {
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "too many type declarations waiting (troupe.types.max-queued-redeclarations); retry"));
    }
  }

  /** On the types thread: checks, commits, and runs the migration. Blocks. */
  private TypeSpec redeclare(CompiledType compiled, TypeEvolution.Migration migration) {
    TypeSpec spec = compiled.spec();
    String name = spec.name();
    Declared current = declaredTypes.get(name);
    TypeSpec currentSpec = current == null ? null : current.type().spec();
    if (migration == TypeEvolution.Migration.NONE) {
      if (pendingMigrations.contains(name)) {
        throw new TroupeException(ErrorCode.INCOMPATIBLE_TYPE, "a discard migration of type '"
            + name + "' has not finished; put the declaration again with ?migration=discard to"
            + " finish it");
      }
      TypeEvolution.Verdict verdict =
          TypeEvolution.check(currentSpec, spec, storedKeys(name));
      if (!verdict.compatible()) {
        throw new TroupeException(ErrorCode.INCOMPATIBLE_TYPE, verdict.message(name));
      }
      long version = runJoined(TYPES_ENTITY, schemaless(SYSTEM_TYPE),
          new Turn.AssignKeys(Map.of(name, spec.toJson()))).version();
      declare(name, compiled, version);
      return spec;
    }
    // A migration: the definition and the record of the migration commit together.
    ObjectNode record = Json.NODES.objectNode();
    record.put("migration", migration.wireName());
    record.put("recordVersion", MIGRATION_RECORD_VERSION);
    long version = runJoined(TYPES_ENTITY, schemaless(SYSTEM_TYPE), new Turn.AssignKeys(Map.of(
        name, spec.toJson(), MIGRATION_KEY_PREFIX + name, record))).version();
    pendingMigrations.add(name);
    declare(name, compiled, version);
    discardHiddenValues(name);
    return spec;
  }

  /**
   * What the type's entities store, from at most {@code max-entities-checked} of them; the
   * summary says whether that was all of them.
   */
  private TypeEvolution.StoredKeys storedKeys(String typeName) {
    int maximum = settings.types().maxEntitiesChecked();
    int batch = Math.min(maximum, settings.types().migrationBatchEntities());
    TypeEvolution.StoredKeys.Builder summary = new TypeEvolution.StoredKeys.Builder();
    int examined = 0;
    EntityId after = null;
    while (true) {
      int wanted = Math.min(batch, maximum - examined);
      if (wanted == 0) {
        // The maximum was reached: complete only if no entity follows.
        return summary.build(store.entitiesOfType(typeName, after, 1).isEmpty());
      }
      List<EntityId> page = store.entitiesOfType(typeName, after, wanted);
      for (EntityId entity : page) {
        summary.add(store.read(entity));
      }
      examined += page.size();
      if (page.size() < wanted) {
        return summary.build(true);
      }
      after = page.get(page.size() - 1);
    }
  }

  /**
   * The {@code discard} migration of a type: each of its entities, batch by batch, runs a turn
   * that deletes the values the type's declaration does not show, then the record of the
   * migration is removed. Idempotent, so a crash anywhere is repaired by running it again.
   */
  private void discardHiddenValues(String typeName) {
    int batch = settings.types().migrationBatchEntities();
    EntityId after = null;
    long rewritten = 0;
    while (true) {
      List<EntityId> page = store.entitiesOfType(typeName, after, batch);
      List<CompletableFuture<TurnOutcome>> turns = new ArrayList<>(page.size());
      for (EntityId entity : page) {
        turns.add(discardHiddenValues(entity, MIGRATION_ATTEMPTS_PER_ENTITY));
      }
      for (CompletableFuture<TurnOutcome> turn : turns) {
        if (Futures.join(turn).changed()) {
          rewritten++;
        }
      }
      if (page.size() < batch) {
        break;
      }
      after = page.get(page.size() - 1);
    }
    runJoined(TYPES_ENTITY, schemaless(SYSTEM_TYPE),
        new Turn.DeleteKey(MIGRATION_KEY_PREFIX + typeName));
    pendingMigrations.remove(typeName);
    log.info("discard migration of type {} finished: {} entities rewritten", typeName, rewritten);
  }

  /** One entity's discard turn, tried again after transient refusals (locks, load). */
  private CompletableFuture<TurnOutcome> discardHiddenValues(EntityId entity, int attempts) {
    return turn(entity, new Turn.DiscardHiddenValues()).handle((outcome, failure) -> {
      if (failure == null) {
        return CompletableFuture.completedFuture(outcome);
      }
      Throwable cause = unwrap(failure);
      boolean transientRefusal = cause instanceof TroupeException error
          && (error.code() == ErrorCode.ABORTED || error.code() == ErrorCode.CONFLICT
              || error.code() == ErrorCode.OVERLOADED);
      if (!transientRefusal || attempts <= 1) {
        return CompletableFuture.<TurnOutcome>failedFuture(cause);
      }
      return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
              MIGRATION_RETRY_PAUSE_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS))
          .thenCompose(ignored -> discardHiddenValues(entity, attempts - 1));
    }).thenCompose(outcome -> outcome);
  }

  /** Runs a turn and waits for it: for the types thread and start-up only. */
  private TurnOutcome runJoined(EntityId entity, CompiledType type, Turn turn) {
    return Futures.join(run(entity, type, turn));
  }

  /** At start, before serving: finishes the discard migrations a crash interrupted. */
  private void resumePendingMigrations() {
    for (String typeName : List.copyOf(pendingMigrations)) {
      log.info("resuming the discard migration of type {}", typeName);
      try {
        discardHiddenValues(typeName);
      } catch (RuntimeException e) {
        log.error("the discard migration of type {} did not finish ({}); it resumes at the next"
            + " start or when the type is put again with ?migration=discard", typeName,
            e.getMessage());
      }
    }
  }

  public Optional<TypeSpec> type(String name) {
    return Optional.ofNullable(declaredTypes.get(name)).map(declared -> declared.type().spec());
  }

  public List<TypeSpec> types() {
    return declaredTypes.values().stream().map(declared -> declared.type().spec())
        .sorted(Comparator.comparing(TypeSpec::name)).toList();
  }

  /**
   * Before any turn runs (the constructor has not returned): commits or aborts what a crash left
   * prepared. PSAC parts are re-evaluated, in arrival order, on the state they meet.
   */
  private void resolveInDoubtTransactions() {
    InDoubtResolution resolution = store.resolveInDoubtTransactions((part, current) ->
        TurnEvaluator.redo(part.entity(), typeOf(part.entity()), current,
            TurnCodec.decode(part.redo()), part.transactionId(),
            settings.storage().dataCentreId(), settings.turnLimits()));
    transactionMetrics.recordRecovery(resolution.toCommit().size(), resolution.toAbort().size());
    if (!resolution.isEmpty()) {
      log.info("resolved in-doubt transactions: committed {} prepared parts, aborted {},"
              + " forgot {} decisions", resolution.toCommit().size(),
          resolution.toAbort().size(), resolution.decisionsToForget().size());
    }
  }

  private void loadTypes() {
    EntityState state = store.read(TYPES_ENTITY);
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      if (entry.getKey().startsWith(MIGRATION_KEY_PREFIX)) {
        JsonNode record = entry.getValue().toJson();
        if (!TypeEvolution.Migration.DISCARD.wireName().equals(record.path("migration").asText())
            || record.path("recordVersion").asInt() != MIGRATION_RECORD_VERSION) {
          // Written by a newer version: resuming it as something else could delete data.
          throw new TroupeException(ErrorCode.CORRUPT_DATA, "unknown type migration record "
              + entry.getKey() + ": " + record + "; this version knows only {\"migration\":"
              + " \"discard\", \"recordVersion\": " + MIGRATION_RECORD_VERSION + "}");
        }
        pendingMigrations.add(entry.getKey().substring(MIGRATION_KEY_PREFIX.length()));
        continue;
      }
      declare(entry.getKey(),
          CompiledType.compile(SpecParser.fromJson(entry.getKey(), entry.getValue().toJson())),
          state.version());
    }
    log.info("loaded {} type definitions", declaredTypes.size());
  }

  private CompiledType typeOf(EntityId entity) {
    if (entity.type().startsWith("$")) {
      throw TroupeException.invalid(
          "entity types starting with '$' are reserved: " + entity.type());
    }
    Declared declared = declaredTypes.get(entity.type());
    return declared != null ? declared.type() : schemaless(entity.type());
  }

  /**
   * A schemaless type compiles to a few objects (no keys, no actions), so it is built per use
   * rather than cached: a cache keyed by client-chosen type names would need a bound of its own.
   */
  private static CompiledType schemaless(String typeName) {
    return CompiledType.schemaless(typeName);
  }

  /** A declared type and the version (commit timestamp) of its stored definition. */
  private record Declared(CompiledType type, long version) {}

  /** Keeps the newest definition whatever order concurrent definitions' answers arrive in. */
  private void declare(String name, CompiledType type, long version) {
    declaredTypes.merge(name, new Declared(type, version),
        (current, candidate) -> candidate.version() > current.version() ? candidate : current);
  }

  // ---------------------------------------------------------------- reads

  /** The latest committed state; fails with {@code not_found} if the entity does not exist. */
  public CompletableFuture<EntityView> get(EntityId entity) {
    return readLatest(entity, (type, state) -> new EntityView(entity, type.render(state),
        state.version()));
  }

  /**
   * The latest committed state as JSON bytes (the object {@link #get} returns as {@code state}) and
   * its version; fails with {@code not_found} if the entity does not exist. A hot entity is
   * rendered once per version. The bytes must not be modified.
   */
  public CompletableFuture<RenderedEntity> getRendered(EntityId entity) {
    return readLatest(entity, (type, state) ->
        new RenderedEntity(entity, renderedStates.render(type, state), state.version()));
  }

  /** An entity's state as JSON bytes, and its version. */
  public record RenderedEntity(EntityId entity, byte[] stateJson, long version) {}

  /** One key's latest value (its default for a declared key never written). */
  public CompletableFuture<JsonNode> getKey(EntityId entity, String key) {
    return readLatest(entity, (type, state) -> {
      JsonNode value = type.renderValue(key, state);
      if (value == null) {
        throw new TroupeException(ErrorCode.NOT_FOUND, entity + " has no key '" + key + "'");
      }
      return value;
    });
  }

  /**
   * The entity as of a commit timestamp (multi-version read from checkpoint plus journal). Fails
   * with {@code history_truncated} below the retained history, {@code not_found} if the entity did
   * not exist then.
   */
  public CompletableFuture<EntityView> readAt(EntityId entity, long timestamp) {
    try {
      checkOpen();
      CompiledType type = typeOf(entity);
      return materialize(() -> {
        EntityState state = store.readAt(entity, timestamp);
        if (!state.exists()) {
          throw new TroupeException(ErrorCode.NOT_FOUND, entity + " did not exist at " + timestamp);
        }
        return new EntityView(entity, type.render(state), state.version());
      });
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Reads the latest durable state: on the caller's thread when cached (the common, fast case),
   * otherwise on a materialization thread.
   */
  private <T> CompletableFuture<T> readLatest(
      EntityId entity, java.util.function.BiFunction<CompiledType, EntityState, T> view) {
    try {
      checkOpen();
      CompiledType type = typeOf(entity);
      java.util.function.Supplier<T> read = () -> {
        EntityState state = store.read(entity);
        if (!state.exists()) {
          throw new TroupeException(ErrorCode.NOT_FOUND, entity + " does not exist");
        }
        return view.apply(type, state);
      };
      return store.isCached(entity)
          ? CompletableFuture.completedFuture(read.get())
          : materialize(read);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Runs a read on the materialization pool; a full queue is {@code overloaded}, a full heap
   * {@code unavailable}.
   */
  private <T> CompletableFuture<T> materialize(java.util.function.Supplier<T> read) {
    try {
      // A cold read allocates a whole state; a cached one only its rendering.
      memory.refuseIfShort();
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    try {
      return CompletableFuture.supplyAsync(read, materializationExecutor);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          settings.materializationQueueLimit() + " reads already wait for storage; retry later"));
    }
  }

  /** The greatest commit timestamp issued so far: a read at it sees every acknowledged write. */
  public long currentTimestamp() {
    return store.currentTimestamp();
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
    IdempotencyRecord idempotency = claimIdempotency();
    CompiledType type;
    try {
      checkOpen();
      memory.refuseIfShort();
      type = typeOf(entity);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (turn instanceof Turn.InvokeAction invoke && hasSync(type, invoke.action())) {
      return runAsTransaction(entity, type, turn, TransactionRequest.Mode.AUTO, idempotency);
    }
    if (turn instanceof Turn.RegisterDependency || turn instanceof Turn.DeregisterDependency) {
      return runAsTransaction(entity, type, turn, TransactionRequest.Mode.AUTO, idempotency);
    }
    // An idempotent turn's record rides on its commit (the same atomic write), found by the
    // transaction id given to the turn; a turn that wrote nothing leaves it unused.
    long transactionId = idempotency == null ? 0 : store.newTransactionId();
    if (idempotency != null) {
      store.attachIdempotency(transactionId, idempotency);
    }
    return run(entity, type, turn, transactionId).handle((outcome, failure) -> {
      if (idempotency != null && !(unwrap(failure) instanceof TroupeException unknown
          && unknown.code() == ErrorCode.OUTCOME_UNKNOWN)) {
        // Answered. An unknown outcome (no answer in time) may still commit: the entity drops
        // the attachment when it answers (see Recipient.Caller).
        store.detachIdempotency(transactionId);
      }
      Throwable cause = unwrap(failure);
      if (cause instanceof TroupeException error && error.code() == ErrorCode.ABORTED
          && TransactionAbort.NEEDS_TRANSACTION.equals(error.reason())) {
        // Its dependencies' entities must join: planned with them when they can be predicted.
        return runAsTransaction(entity, type, turn, TransactionRequest.Mode.AUTO, idempotency);
      }
      return failure == null ? CompletableFuture.completedFuture(outcome)
          : CompletableFuture.<TurnOutcome>failedFuture(cause);
    }).thenCompose(outcome -> outcome);
  }

  // ---------------------------------------------------------------- idempotent writes

  /**
   * The idempotency record of the write being started on this thread (see {@link #idempotently}).
   * A thread-local because every write entry point ({@link #turn}, {@link #transact}, {@link
   * #commitInteractive}, dependency registration) claims it synchronously when called; it never
   * outlives the {@code idempotently} call that set it.
   */
  private final ThreadLocal<IdempotencyRecord> startingIdempotency = new ThreadLocal<>();
  private final ThreadLocal<Boolean> idempotencyClaimed = new ThreadLocal<>();

  /**
   * Starts a write ({@code write} must call one write entry point synchronously) whose commit also
   * records {@code record} durably, in the same atomic write (a single turn's journal record or
   * a transaction's commit decision). Returns whether a write entry point took the record: false
   * when {@code write} refused before reaching one (nothing changed, nothing recorded).
   */
  public boolean idempotently(IdempotencyRecord record, Runnable write) {
    startingIdempotency.set(record);
    idempotencyClaimed.set(Boolean.FALSE);
    try {
      write.run();
      return Boolean.TRUE.equals(idempotencyClaimed.get());
    } finally {
      startingIdempotency.remove();
      idempotencyClaimed.remove();
    }
  }

  private IdempotencyRecord claimIdempotency() {
    IdempotencyRecord record = startingIdempotency.get();
    if (record != null) {
      startingIdempotency.remove();
      idempotencyClaimed.set(Boolean.TRUE);
    }
    return record;
  }

  /** The store's durable record of an idempotency key, if any. */
  public java.util.Optional<IdempotencyRecord> idempotencyRecord(String qualifiedKey) {
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

  /** Idempotent transactions running, by key (a count: a replanned one runs again). */
  private final java.util.concurrent.ConcurrentHashMap<String, Integer> runningIdempotent =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Whether a write with this key may still commit here: a turn not yet answered by its entity, or
   * a transaction whose coordinator has not finished, also after its caller gave up waiting
   * ({@code outcome_unknown}). A retry meanwhile must not run it a second time.
   */
  public boolean idempotentWriteRunning(String qualifiedKey) {
    return runningIdempotent.containsKey(qualifiedKey) || store.idempotencyAttached(qualifiedKey);
  }

  private static Throwable unwrap(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }

  /**
   * Runs one turn as a transaction of its own: for an action with sync calls, for a
   * (de)registration, and for a turn that touches declared dependencies (whose other entities
   * join it). Answers like a turn:
   * the entity's outcome, a failed precondition as {@code precondition_failed}, a value past a
   * limit as {@code too_large} and a failed evaluation as {@code invalid_request}.
   */
  private CompletableFuture<TurnOutcome> runAsTransaction(EntityId entity, CompiledType type,
      Turn turn, TransactionRequest.Mode mode, IdempotencyRecord idempotency) {
    TransactionRequest request = new TransactionRequest(
        List.of(new TransactionRequest.Operation(entity, turn)), List.of(), mode);
    return transactCommitted(request, idempotency).handle((committed, failure) -> {
      if (failure != null) {
        Throwable cause = unwrap(failure);
        if (cause instanceof TroupeException error && error.code() == ErrorCode.ABORTED
            && TransactionAbort.PRECONDITION_FAILED.equals(error.reason())) {
          throw new TroupeException(ErrorCode.PRECONDITION_FAILED, error.getMessage());
        }
        if (cause instanceof TroupeException error && error.code() == ErrorCode.ABORTED
            && TransactionAbort.TOO_LARGE.equals(error.reason())) {
          throw new TroupeException(ErrorCode.TOO_LARGE, error.reason(), error.getMessage());
        }
        if (cause instanceof TroupeException error && error.code() == ErrorCode.ABORTED
            && TransactionAbort.EVALUATION_FAILED.equals(error.reason())) {
          throw new TroupeException(ErrorCode.INVALID_REQUEST, error.reason(), error.getMessage());
        }
        throw cause instanceof RuntimeException runtime ? runtime : new CompletionException(cause);
      }
      CoordinatorCore.ParticipantResult result = committed.results().get(entity);
      return new TurnOutcome(result.version(), result.wrote(), result.state(), type);
    });
  }

  private static boolean hasSync(CompiledType type, String action) {
    ActionSpec spec = type.spec().actions().get(action);
    return spec != null && !spec.sync().isEmpty();
  }

  // ---------------------------------------------------------------- transactions

  /**
   * Runs a static multi-entity transaction (strict two-phase locking with wait-die, then
   * two-phase commit). Fails with {@code aborted} (and a reason) when it changed nothing, with
   * {@code outcome_unknown} only when its outcome cannot be known, and with {@code
   * invalid_request}, {@code unknown_type} or {@code unknown_action} for a malformed request.
   */
  public CompletableFuture<TransactionOutcome> transact(TransactionRequest request) {
    Map<EntityId, CompiledType> types = new LinkedHashMap<>();
    return transactCommitted(request, types, claimIdempotency())
        .thenApply(committed -> render(committed, types));
  }

  public TransactionMetrics transactionMetrics() {
    return transactionMetrics;
  }

  private CompletableFuture<CoordinatorCore.Outcome.Committed> transactCommitted(
      TransactionRequest request, IdempotencyRecord idempotency) {
    return transactCommitted(request, new LinkedHashMap<>(), idempotency);
  }

  /** Runs the transaction; {@code types} receives each participant's type, in plan order. */
  private CompletableFuture<CoordinatorCore.Outcome.Committed> transactCommitted(
      TransactionRequest request, Map<EntityId, CompiledType> types,
      IdempotencyRecord idempotency) {
    Map<EntityId, CoordinatorCore.Part> parts;
    try {
      checkOpen();
      memory.refuseIfShort();
      parts = plan(request, types);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    List<Dependency> registering = new ArrayList<>();
    for (CoordinatorCore.Part part : parts.values()) {
      for (Turn turn : part.turns()) {
        if (turn instanceof Turn.RegisterDependency register) {
          registering.add(register.dependency());
        }
      }
    }
    registering.forEach(pendingRegistrations::add);
    CompletableFuture<CoordinatorCore.Outcome.Committed> outcome =
        request.mode() == TransactionRequest.Mode.DYNAMIC ? dynamic(parts, types, idempotency)
            : plannedOrDynamic(parts, types, settings.transactions().maxReplans(), idempotency);
    if (registering.isEmpty()) {
      return outcome;
    }
    return outcome.whenComplete((committed, failure) ->
        registering.forEach(pendingRegistrations::remove));
  }

  /**
   * Dependencies being registered by transactions in progress: a planned transaction that writes
   * their leader key plans their follower too. Its reconnaissance reads committed states only,
   * and a registration ordered before it but not yet committed would otherwise reach beyond its
   * plan (a price change queued behind additions to carts, on a hot product).
   */
  private final PendingRegistrations pendingRegistrations = new PendingRegistrations();

  private CompletableFuture<CoordinatorCore.Outcome.Committed> dynamic(
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      IdempotencyRecord idempotency) {
    TransactionRun transaction = new TransactionRun(parts, types, this::typeOf,
        coordinatorLimits, entity -> registries.get(store.partitionOf(entity)), store,
        system.scheduler(), system.executionContext());
    return awaitOutcome(transaction, idempotency, TransactionRun::start);
  }

  /**
   * Planned: ordered by the sequencer with the followers its dependencies will reach (their keys
   * reserved, {@link DependencyPlanner}), never dies, so never retried for conflicts. One whose
   * forwards reach beyond its plan (a dependency registered since the reconnaissance) is planned
   * again from fresher states, up to {@code replans} times, then run dynamic; so is one the
   * reconnaissance cannot plan.
   */
  private CompletableFuture<CoordinatorCore.Outcome.Committed> plannedOrDynamic(
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      int replans, IdempotencyRecord idempotency) {
    Optional<Map<EntityId, CoordinatorCore.Part>> planned = DependencyPlanner.plan(parts, types,
        this::cachedState, pendingRegistrations::of, settings.turnLimits().maxDependencyChain());
    if (planned.isEmpty()) {
      transactionMetrics.recordDependencyPlanning(false);
      return dynamic(parts, types, idempotency);
    }
    return planned(planned.get(), types, idempotency).handle((committed, failure) -> {
      Throwable cause = unwrap(failure);
      if (cause instanceof TroupeException error && error.code() == ErrorCode.ABORTED
          && TransactionAbort.DEPENDENCIES_INVOLVED.equals(error.reason())) {
        transactionMetrics.recordDependencyPlanning(replans > 0);
        return replans > 0 ? plannedOrDynamic(parts, types, replans - 1, idempotency)
            : dynamic(parts, types, idempotency);
      }
      return failure == null ? CompletableFuture.completedFuture(committed)
          : CompletableFuture.<CoordinatorCore.Outcome.Committed>failedFuture(cause);
    }).thenCompose(outcome -> outcome);
  }

  /** An entity's latest durable state if cached (a planned transaction's reconnaissance). */
  private Optional<EntityState> cachedState(EntityId entity) {
    return store.isCached(entity) ? Optional.of(store.read(entity)) : Optional.empty();
  }

  private CompletableFuture<CoordinatorCore.Outcome.Committed> planned(
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      IdempotencyRecord idempotency) {
    TransactionRun transaction = new TransactionRun(parts, types, this::typeOf,
        coordinatorLimitsWithoutRetries, true,
        entity -> registries.get(store.partitionOf(entity)), store, system.scheduler(),
        system.executionContext());
    return awaitOutcome(transaction, idempotency, run -> {
      CompletableFuture<CoordinatorCore.Outcome> outcome = new CompletableFuture<>();
      sequencer.submit(position -> run.start(store.newTransactionId(), position)
          .whenComplete((result, failure) -> {
            if (failure != null) {
              outcome.completeExceptionally(failure);
            } else {
              outcome.complete(result);
            }
          }));
      return outcome;
    });
  }

  /**
   * Starts a transaction run with {@code start} and turns its outcome into the committed result
   * or the failure, counting both.
   */
  private CompletableFuture<CoordinatorCore.Outcome.Committed> awaitOutcome(
      TransactionRun transaction, IdempotencyRecord idempotency,
      java.util.function.Function<TransactionRun, CompletableFuture<CoordinatorCore.Outcome>> start) {
    transaction.recordWithDecision(idempotency);
    long started = System.nanoTime();
    transactionMetrics.recordStarted();
    if (idempotency != null) {
      // Until the coordinator is done, not until the caller stops waiting (outcome_unknown).
      String key = idempotency.qualifiedKey();
      runningIdempotent.merge(key, 1, Integer::sum);
      transaction.finished().whenComplete((ignored, failure) ->
          runningIdempotent.computeIfPresent(key, (k, count) -> count == 1 ? null : count - 1));
    }
    return start.apply(transaction)
        .orTimeout(turnTimeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .handle((result, failure) -> {
          if (failure != null) {
            TroupeException unknown = new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
                "no outcome within " + turnTimeout.toMillis() + " ms; the transaction may still"
                    + " commit");
            transactionMetrics.recordFailed(unknown, transaction.lockConflicts());
            throw unknown;
          }
          return switch (result) {
            case CoordinatorCore.Outcome.Committed committed -> {
              transactionMetrics.recordCommitted(System.nanoTime() - started,
                  transaction.lockConflicts());
              yield committed;
            }
            case CoordinatorCore.Outcome.Failed failed -> {
              transactionMetrics.recordFailed(failed.error(), transaction.lockConflicts());
              throw failed.error();
            }
          };
        });
  }

  private TransactionOutcome render(CoordinatorCore.Outcome.Committed committed,
      Map<EntityId, CompiledType> types) {
    List<TransactionOutcome.EntityOutcome> entities = new ArrayList<>();
    committed.results().forEach((entity, result) -> entities.add(
        new TransactionOutcome.EntityOutcome(entity, result.readVersion(), result.version(),
            result.wrote(), () -> types.get(entity).render(result.state()))));
    return new TransactionOutcome(committed.transactionId(), entities);
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
      requireDependencyTypes(dependency);
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
      typeOf(ends.leader().entity());
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return transact(new TransactionRequest(List.of(new TransactionRequest.Operation(
        ends.leader().entity(), new Turn.DeregisterDependency(id, ends.leader().key()))),
        List.of(), TransactionRequest.Mode.DYNAMIC));
  }

  /** A registered dependency by id, as its leader records it; {@code not_found} if none. */
  public CompletableFuture<Dependency> dependency(String id) {
    Dependency.Ends ends;
    try {
      ends = Dependency.parseId(id);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return readLatest(ends.leader().entity(), (type, state) -> {
      if (state.get(DependencyKeys.outgoing(ends.leader().key())) instanceof DependencyTable table
          && table.get(id) != null) {
        return table.get(id).dependency();
      }
      throw new TroupeException(ErrorCode.NOT_FOUND, "no dependency " + id + " is registered");
    }).exceptionallyCompose(failure -> {
      Throwable cause = unwrap(failure);
      if (cause instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND) {
        return CompletableFuture.failedFuture(new TroupeException(ErrorCode.NOT_FOUND,
            "no dependency " + id + " is registered"));
      }
      return CompletableFuture.failedFuture(cause);
    });
  }

  /**
   * An entity's dependencies in both directions, each list in id order: those its keys lead and
   * those its keys follow (with each leader's last forwarded value, for aggregates).
   */
  public CompletableFuture<EntityDependencies> dependencies(EntityId entity) {
    return readLatest(entity, (type, state) -> {
      java.util.TreeMap<String, Dependency> leads = new java.util.TreeMap<>();
      java.util.TreeMap<String, DependencyTable.Entry> follows = new java.util.TreeMap<>();
      state.values().forEach((key, value) -> {
        if (value instanceof DependencyTable table) {
          for (DependencyTable.Entry entry : table.all()) {
            if (DependencyKeys.isOutgoing(key)) {
              leads.put(entry.dependency().id(), entry.dependency());
            } else {
              follows.put(entry.dependency().id(), entry);
            }
          }
        }
      });
      return new EntityDependencies(entity, List.copyOf(leads.values()),
          List.copyOf(follows.values()), state.version());
    });
  }

  /** An entity's dependencies, as of {@code version}. */
  public record EntityDependencies(EntityId entity, List<Dependency> leads,
      List<DependencyTable.Entry> follows, long version) {}

  private void requireDependencyTypes(Dependency dependency) {
    // Reserved types are refused here; the rest is checked where the parts evaluate.
    typeOf(dependency.leader().entity());
    typeOf(dependency.follower().entity());
  }

  // ------------------------------------------------------------ interactive transactions

  /** The interactive transactions' lifecycle (a pure core); guarded by its own monitor. */
  private final InteractiveCore interactive;
  /** Per open interactive transaction, the timer that checks it for idleness. */
  private final Map<Long, org.apache.pekko.actor.Cancellable> idleTimers =
      new ConcurrentHashMap<>();
  private final PlannedSequencer sequencer = new PlannedSequencer();

  /** Monotonic milliseconds for idle timeouts (the shell's clock; the core only compares). */
  private static long nowMillis() {
    return System.nanoTime() / 1_000_000;
  }

  /**
   * Begins an interactive transaction: its steps take locks as they go (strict two-phase locking
   * with wait-die, serial and keys policies), see their own writes, and apply nothing until
   * {@link #commitInteractive}. Aborted after {@code interactive-idle-timeout-millis} without a
   * request. Returns its id.
   */
  public long beginInteractive() {
    checkOpen();
    memory.refuseIfShort();
    StoreHealth storage = store.health();
    if (!storage.accepting()) {
      // A failed store no longer raises its durable clock ceiling, so an id issued now could be
      // issued again after the restart, and a client holding it across the restart would act on
      // another client's transaction (found by the simulator). Nothing could commit anyway.
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "storage failed and accepts no more commits: " + storage.failure());
    }
    long transactionId = store.newTransactionId();
    synchronized (interactive) {
      interactive.begin(transactionId, nowMillis());
    }
    scheduleIdleCheck(transactionId);
    return transactionId;
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
    CompiledType type;
    try {
      checkOpen();
      memory.refuseIfShort();
      synchronized (interactive) {
        interactive.requireOpen(transactionId);
      }
      type = typeOf(entity);
      if (turn instanceof Turn.InvokeAction invoke && hasSync(type, invoke.action())) {
        throw TroupeException.invalid("action %s.%s has sync calls; run it in a static"
            .formatted(type.name(), invoke.action()) + " transaction (POST /v1/transactions)");
      }
      synchronized (interactive) {
        interactive.stepStarted(transactionId, entity, type, nowMillis());
      }
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<TurnResult> answer = Futures.onCompletingThread(
        AskPattern.<EntityRegistry.Command, TurnResult>ask(
            registries.get(store.partitionOf(entity)),
            replyTo -> new EntityRegistry.Route(entity,
                new EntityActor.Step(transactionId, transactionId, turn, type, replyTo)),
            turnTimeout, system.scheduler()));
    return answer.handle((result, failure) -> {
      synchronized (interactive) {
        interactive.stepFinished(transactionId, entity, turn,
            failure == null && result instanceof TurnResult.Done, nowMillis());
      }
      scheduleIdleCheck(transactionId);
      if (failure != null) {
        abortInteractive(transactionId);
        throw new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "no answer within "
            + turnTimeout.toMillis() + " ms; the transaction was aborted");
      }
      return switch (result) {
        case TurnResult.Done done ->
            new EntityView(entity, type.render(done.state()), done.version());
        case TurnResult.Failed failed -> {
          if (failed.error().code() == ErrorCode.ABORTED) {
            abortInteractive(transactionId);
          }
          throw failed.error();
        }
      };
    });
  }

  /** Commits an interactive transaction (two-phase commit over what it touched). */
  public CompletableFuture<TransactionOutcome> commitInteractive(long transactionId) {
    InteractiveCore.Commit commit;
    try {
      checkOpen();
      synchronized (interactive) {
        commit = interactive.commit(transactionId);
      }
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    cancelIdleCheck(transactionId);
    if (commit.parts().isEmpty()) {
      return CompletableFuture.completedFuture(new TransactionOutcome(transactionId, List.of()));
    }
    Map<EntityId, CompiledType> types = commit.types();
    TransactionRun run = new TransactionRun(commit.parts(), types, this::typeOf,
        coordinatorLimitsWithoutRetries, entity -> registries.get(store.partitionOf(entity)),
        store, system.scheduler(), system.executionContext());
    return awaitOutcome(run, claimIdempotency(), started -> started.start(transactionId))
        .thenApply(committed -> render(committed, types));
  }

  /** Aborts an interactive transaction: nothing it did is applied; its locks are released. */
  public void abortInteractive(long transactionId) {
    java.util.Optional<List<EntityId>> touched;
    synchronized (interactive) {
      touched = interactive.abort(transactionId);
    }
    touched.ifPresent(entities -> releaseInteractive(transactionId, entities));
  }

  /** Whether an interactive transaction with this id is open (for tests and metrics). */
  public boolean isInteractiveOpen(long transactionId) {
    synchronized (interactive) {
      return interactive.isOpen(transactionId);
    }
  }

  /** An ended-by-abort transaction: count it and release its parts in the entities it touched. */
  private void releaseInteractive(long transactionId, List<EntityId> touched) {
    cancelIdleCheck(transactionId);
    transactionMetrics.recordAbortedInteractive();
    for (EntityId entity : touched) {
      registries.get(store.partitionOf(entity)).tell(new EntityRegistry.Route(entity,
          new EntityActor.Decide(transactionId, false, null)));
    }
  }

  /**
   * (Re)schedules the idle check of an open transaction at its idle deadline. A check that finds
   * the transaction active again (or a step in progress) does nothing: the activity scheduled a
   * later check.
   */
  private void scheduleIdleCheck(long transactionId) {
    org.apache.pekko.actor.Cancellable previous;
    // Under the lock: an abort or commit ends the transaction under it and cancels its timer
    // afterwards, so a timer is never registered for a transaction already over.
    synchronized (interactive) {
      java.util.Optional<Long> deadline = interactive.idleDeadlineMillis(transactionId);
      if (deadline.isEmpty()) {
        return;
      }
      org.apache.pekko.actor.Cancellable timer = system.scheduler().scheduleOnce(
          Duration.ofMillis(Math.max(0, deadline.get() - nowMillis())),
          () -> {
            java.util.Optional<List<EntityId>> expired;
            synchronized (interactive) {
              expired = interactive.expireIfIdle(transactionId, nowMillis());
            }
            expired.ifPresent(entities -> releaseInteractive(transactionId, entities));
          },
          system.executionContext());
      previous = idleTimers.put(transactionId, timer);
    }
    if (previous != null) {
      previous.cancel();
    }
  }

  private void cancelIdleCheck(long transactionId) {
    org.apache.pekko.actor.Cancellable timer = idleTimers.remove(transactionId);
    if (timer != null) {
      timer.cancel();
    }
  }

  /**
   * Each participant's part: the request's operations plus, depth first, every sync call they
   * make, checked against the transaction limits before anything runs.
   */
  private Map<EntityId, CoordinatorCore.Part> plan(
      TransactionRequest request, Map<EntityId, CompiledType> types) {
    if (request.operations().isEmpty() && request.reads().isEmpty()) {
      throw TroupeException.invalid("a transaction needs at least one operation or read");
    }
    Map<EntityId, List<Turn>> turns = new LinkedHashMap<>();
    int[] operations = {0};
    for (TransactionRequest.Operation operation : request.operations()) {
      addOperation(operation.entity(), operation.turn(), 0, turns, types, operations);
    }
    java.util.Set<EntityId> reads = new java.util.HashSet<>();
    for (EntityId read : request.reads()) {
      types.computeIfAbsent(read, this::typeOf);
      turns.computeIfAbsent(read, ignored -> new ArrayList<>());
      reads.add(read);
      checkParticipants(types);
    }
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    turns.forEach((entity, entityTurns) ->
        parts.put(entity, new CoordinatorCore.Part(entityTurns, reads.contains(entity))));
    return parts;
  }

  private void addOperation(EntityId entity, Turn turn, int depth,
      Map<EntityId, List<Turn>> turns, Map<EntityId, CompiledType> types, int[] operations) {
    RuntimeSettings.TransactionSettings limits = settings.transactions();
    if (++operations[0] > limits.maxOperations()) {
      throw new TroupeException(ErrorCode.TOO_LARGE,
          "a transaction may carry at most %d operations, sync calls included"
              .formatted(limits.maxOperations()));
    }
    CompiledType type = types.computeIfAbsent(entity, this::typeOf);
    turns.computeIfAbsent(entity, ignored -> new ArrayList<>()).add(turn);
    checkParticipants(types);
    if (turn instanceof Turn.InvokeAction invoke && hasSync(type, invoke.action())) {
      if (depth >= limits.maxSyncDepth()) {
        throw TroupeException.invalid(
            "sync calls nest deeper than %d levels at %s.%s".formatted(limits.maxSyncDepth(),
                entity, invoke.action()));
      }
      List<SyncInvocation> calls;
      try {
        calls = type.synchronizedCalls(invoke.action(), invoke.params(),
            settings.turnLimits().values());
      } catch (TroupeException e) {
        // An argument that fails to evaluate, or builds too much, fails the transaction like a
        // failing effect would: aborted with its reason.
        if (TransactionAbort.EVALUATION_FAILED.equals(e.reason())
            || TransactionAbort.TOO_LARGE.equals(e.reason())) {
          throw new TroupeException(ErrorCode.ABORTED, e.reason(), e.getMessage());
        }
        throw e;
      }
      for (SyncInvocation call : calls) {
        addOperation(call.entity(), new Turn.InvokeAction(call.action(), call.arguments()),
            depth + 1, turns, types, operations);
      }
    }
  }

  private void checkParticipants(Map<EntityId, CompiledType> types) {
    int limit = settings.transactions().maxParticipants();
    if (types.size() > limit) {
      throw new TroupeException(ErrorCode.TOO_LARGE,
          "a transaction may touch at most %d entities, sync calls included".formatted(limit));
    }
  }

  private CompletableFuture<TurnOutcome> run(EntityId entity, CompiledType type, Turn turn) {
    return run(entity, type, turn, 0);
  }

  /** {@code transactionId}: the turn's (an idempotent turn's, see {@link #turn}), or 0 for any. */
  private CompletableFuture<TurnOutcome> run(EntityId entity, CompiledType type, Turn turn,
      long transactionId) {
    long started = System.nanoTime();
    ActorRef<EntityRegistry.Command> registry = registries.get(store.partitionOf(entity));
    CompletableFuture<TurnResult> answer = Futures.onCompletingThread(
        AskPattern.<EntityRegistry.Command, TurnResult>ask(
            registry,
            replyTo -> new EntityRegistry.Route(entity, new EntityActor.RunTurn(turn, type, replyTo,
                transactionId)),
            turnTimeout,
            system.scheduler()));
    return answer.handle((result, failure) -> {
      metrics.recordLatencyNanos(System.nanoTime() - started);
      if (failure != null) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        if (cause instanceof TimeoutException) {
          throw new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
              "no answer within " + turnTimeout.toMillis() + " ms; the turn may still commit");
        }
        throw new TroupeException(ErrorCode.OUTCOME_UNKNOWN, String.valueOf(cause.getMessage()));
      }
      return switch (result) {
        case TurnResult.Done done ->
            new TurnOutcome(done.version(), done.wrote(), done.state(), type);
        case TurnResult.Failed failed -> throw failed.error();
      };
    });
  }

  // ---------------------------------------------------------------- operations

  public StorageStatistics storageStatistics() {
    return store.statistics();
  }

  /**
   * Whether this node should receive traffic (readiness), with the reasons it should not: the
   * store failed (it refuses every write until the node restarts), stored data failed its
   * integrity check (an operator must check and repair it, docs/OPERATIONS.md), the engine stopped
   * after an internal error, or it is closed. A node that is not ready may still answer what it
   * safely can (reads of intact entities).
   */
  public NodeHealth health() {
    List<NodeHealth.Problem> problems = new ArrayList<>();
    if (closed.get()) {
      problems.add(new NodeHealth.Problem("closed", "the engine is closed"));
    }
    if (failed.get()) {
      problems.add(new NodeHealth.Problem("internal_error",
          "the engine stopped after an internal error; see the log"));
    }
    StoreHealth storage = store.health();
    if (!storage.accepting()) {
      problems.add(new NodeHealth.Problem("storage_failed",
          "storage failed and refuses every write until the node restarts: " + storage.failure()));
    }
    if (!storage.intact()) {
      problems.add(new NodeHealth.Problem("corrupt_data",
          storage.corruptionsDetected() + " read(s) met data that failed its integrity check; last: "
              + storage.lastCorruption() + ". Run troupe check (docs/OPERATIONS.md)"));
    }
    return new NodeHealth(List.copyOf(problems), storage.corruptionsDetected());
  }

  /**
   * Registers what to do once the store fails (the server stops the process when configured to,
   * so that a supervisor restarts it); called at most once, on the thread that met the failure,
   * after it was logged. Called at once if the store failed already.
   */
  public void onStorageFailure(Consumer<Throwable> listener) {
    this.storageFailureListener = java.util.Objects.requireNonNull(listener, "listener");
    Throwable failure = storageEvents.failure;
    if (failure != null) {
      storageEvents.tellListener(failure);
    }
  }

  /** Logs what storage reports at ERROR, so a supervisor or an operator hears of it. */
  private final class LoudStorageEvents implements StorageEvents {
    private final AtomicBoolean listenerTold = new AtomicBoolean();
    private volatile Throwable failure;

    @Override
    public void storeFailed(Throwable cause) {
      if (failure == null) {
        failure = cause;
        log.error("storage failed: every write is refused until the node restarts"
            + " (acknowledged writes are safe; outcomes in flight are unknown)", cause);
        tellListener(cause);
      }
    }

    void tellListener(Throwable cause) {
      Consumer<Throwable> listener = storageFailureListener;
      if (listener != null && listenerTold.compareAndSet(false, true)) {
        listener.accept(cause);
      }
    }

    @Override
    public void corruptionDetected(String where, CorruptDataException damage) {
      long now = System.currentTimeMillis();
      long last = lastCorruptionLoggedMillis.get();
      if (now - last >= 1000 && lastCorruptionLoggedMillis.compareAndSet(last, now)) {
        log.error("corrupt data in {}: refused to serve it or write over it ({} damaged reads so"
            + " far; later ones within a second are counted, not logged); run troupe check,"
            + " see docs/OPERATIONS.md", where, store.health().corruptionsDetected(), damage);
      }
    }
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

  /** The storage engine, for tools in this JVM that need it (benchmarks, recovery checks). */
  public Store store() {
    return store;
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
    memory.close();
    typeExecutor.shutdownNow();
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      log.warn("actor system did not terminate cleanly", e);
    }
    materializationExecutor.shutdown();
    store.close();
  }
}
