package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.Value;
import dev.troupe.storage.Store;
import dev.troupe.txn.Turn;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's declared types: loaded from their entity at start, redeclared one at a time on their
 * own thread (a redeclaration reads and rewrites many entities), and looked up by every request.
 *
 * <p>Type definitions are themselves stored as an entity ({@value Troupe#SYSTEM_TYPE}/types, one
 * register key per type), so they share the journal's durability and recovery. A redeclaration
 * that would hide stored values is refused unless it names a migration (docs/ARCHITECTURE.md,
 * "Type evolution"); a {@code discard} migration is recorded in the same commit as the definition
 * (key {@value #MIGRATION_KEY_PREFIX}{@code <type>}) and removed once every entity was rewritten,
 * so a crash in between resumes it when the engine opens again, before it serves anything.
 */
final class TypeRegistry implements dev.troupe.txn.wire.TypeRegistry {
  /**
   * Keys of {@link #TYPES_ENTITY} recording an unfinished migration: a type name never contains
   * '/', so they never clash with a type's key.
   */
  static final String MIGRATION_KEY_PREFIX = "migration/";

  private static final Logger log = LoggerFactory.getLogger(TypeRegistry.class);
  private static final EntityId TYPES_ENTITY = new EntityId(Troupe.SYSTEM_TYPE, "types");
  /** The format of a migration record: {@code {"migration": "discard", "recordVersion": 1}}. */
  private static final int MIGRATION_RECORD_VERSION = 1;
  /** How often a migration tries one entity's rewrite that met a transient refusal. */
  private static final int MIGRATION_ATTEMPTS_PER_ENTITY = 20;
  private static final long MIGRATION_RETRY_PAUSE_MILLIS = 50;

  /** A turn on an entity of a given type (the reserved types' entity included). */
  interface TypedTurns {
    CompletableFuture<TurnOutcome> run(EntityId entity, CompiledType type, Turn turn);
  }

  private final RuntimeSettings.TypeSettings settings;
  private final Store store;
  /** Writes the types' own entity. */
  private final TypedTurns typedTurns;
  /** A turn as a client's (the engine's checks and the entity's type apply): the migrations'. */
  private final BiFunction<EntityId, Turn, CompletableFuture<TurnOutcome>> turns;
  /** Declared types with the version of the definition they were compiled from. */
  private final Map<String, Declared> declaredTypes = new ConcurrentHashMap<>();
  /**
   * Per type, the definition the current one replaced (at most one each): a message sent just
   * before a redeclaration still resolves on the receiving node (see {@link #find}).
   */
  private final Map<String, Declared> replacedTypes = new ConcurrentHashMap<>();
  /** Types whose discard migration was recorded but has not finished. */
  private final Set<String> pendingMigrations = ConcurrentHashMap.newKeySet();
  /** Runs redeclarations one at a time; its queue is bounded by a setting. */
  private final ExecutorService typeExecutor;

  /** A declared type and the version (commit timestamp) of its stored definition. */
  private record Declared(CompiledType type, long version) {}

  /**
   * Whether a type with an action that sends messages was ever declared here (since start, or
   * loaded at start): never goes back to false, so a reader that sees false knows no turn so far
   * could have sent a message.
   */
  private volatile boolean sendingTypeDeclared;

  /**
   * On a member of a cluster (a shared store): how long a name found undeclared stays trusted as
   * schemaless ({@code troupe.cluster.types-refresh-millis}); 0 on a node with a store of its own,
   * where every definition is declared through this registry.
   */
  private final long sharedRefreshNanos;
  /**
   * Shared store only: when each undeclared name was last looked up in the store (a bounded LRU;
   * guarded by itself). A name missing here is looked up at once.
   */
  private final Map<String, Long> undeclaredCheckedAt =
      new java.util.LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
          return size() > MAX_UNDECLARED_NAMES_REMEMBERED;
        }
      };
  private static final int MAX_UNDECLARED_NAMES_REMEMBERED = 10_000;

  TypeRegistry(RuntimeSettings.TypeSettings settings, Store store, TypedTurns typedTurns,
      BiFunction<EntityId, Turn, CompletableFuture<TurnOutcome>> turns) {
    this(settings, store, typedTurns, turns, 0);
  }

  /**
   * @param sharedRefreshMillis 0 on a node with a store of its own; on a member of a cluster,
   *     {@code troupe.cluster.types-refresh-millis}: definitions are then read from the shared
   *     store (another member may have declared them) when a name is not known here
   */
  TypeRegistry(RuntimeSettings.TypeSettings settings, Store store, TypedTurns typedTurns,
      BiFunction<EntityId, Turn, CompletableFuture<TurnOutcome>> turns,
      long sharedRefreshMillis) {
    this.settings = settings;
    this.store = store;
    this.typedTurns = typedTurns;
    this.turns = turns;
    this.sharedRefreshNanos = TimeUnit.MILLISECONDS.toNanos(sharedRefreshMillis);
    this.typeExecutor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(settings.maxQueuedRedeclarations()),
        Thread.ofPlatform().name("troupe-types").daemon(true).factory());
  }

  /** See {@link Troupe#defineType(TypeSpec, TypeEvolution.Migration)}. */
  CompletableFuture<TypeSpec> define(TypeSpec spec, TypeEvolution.Migration migration,
      Runnable checkOpen) {
    if (spec.name().startsWith("$")) {
      return CompletableFuture.failedFuture(TroupeException.invalid(
          "type names starting with '$' are reserved: " + spec.name()));
    }
    if (sharedRefreshNanos > 0
        && spec.actions().values().stream().anyMatch(action -> !action.send().isEmpty())) {
      // Messages are delivered from the replication log by one node; a data centre of several
      // nodes shares that log and has no deliverer yet (docs/design/cluster.md).
      return CompletableFuture.failedFuture(TroupeException.invalid("type " + spec.name()
          + " has actions that send messages, which a data centre of several nodes does not"
          + " deliver yet; declare it on a single node, or without send"));
    }
    CompiledType compiled;
    try {
      checkOpen.run();
      compiled = CompiledType.compile(spec);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    try {
      return CompletableFuture.supplyAsync(() -> redeclare(compiled, migration), typeExecutor);
    } catch (RejectedExecutionException busy) {
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
      long version = writeTypes(new Turn.AssignKeys(Map.of(name, spec.toJson()))).version();
      declare(name, compiled, version);
      return spec;
    }
    // A migration: the definition and the record of the migration commit together.
    ObjectNode record = Json.NODES.objectNode();
    record.put("migration", migration.wireName());
    record.put("recordVersion", MIGRATION_RECORD_VERSION);
    long version = writeTypes(new Turn.AssignKeys(Map.of(
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
    int maximum = settings.maxEntitiesChecked();
    int batch = Math.min(maximum, settings.migrationBatchEntities());
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
        summary.add(readDefinitionsOrEntity(entity));
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
    int batch = settings.migrationBatchEntities();
    EntityId after = null;
    long rewritten = 0;
    while (true) {
      List<EntityId> page = store.entitiesOfType(typeName, after, batch);
      List<CompletableFuture<TurnOutcome>> rewrites = new ArrayList<>(page.size());
      for (EntityId entity : page) {
        rewrites.add(discardHiddenValues(entity, MIGRATION_ATTEMPTS_PER_ENTITY));
      }
      for (CompletableFuture<TurnOutcome> rewrite : rewrites) {
        if (Futures.join(rewrite).changed()) {
          rewritten++;
        }
      }
      if (page.size() < batch) {
        break;
      }
      after = page.get(page.size() - 1);
    }
    writeTypes(new Turn.DeleteKey(MIGRATION_KEY_PREFIX + typeName));
    pendingMigrations.remove(typeName);
    log.info("discard migration of type {} finished: {} entities rewritten", typeName, rewritten);
  }

  /** One entity's discard turn, tried again after transient refusals (locks, load). */
  private CompletableFuture<TurnOutcome> discardHiddenValues(EntityId entity, int attempts) {
    return turns.apply(entity, new Turn.DiscardHiddenValues()).handle((outcome, failure) -> {
      if (failure == null) {
        return CompletableFuture.completedFuture(outcome);
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      boolean transientRefusal = cause instanceof TroupeException error
          && (error.code() == ErrorCode.ABORTED || error.code() == ErrorCode.CONFLICT
              || error.code() == ErrorCode.OVERLOADED);
      if (!transientRefusal || attempts <= 1) {
        return CompletableFuture.<TurnOutcome>failedFuture(cause);
      }
      return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
              MIGRATION_RETRY_PAUSE_MILLIS, TimeUnit.MILLISECONDS))
          .thenCompose(ignored -> discardHiddenValues(entity, attempts - 1));
    }).thenCompose(outcome -> outcome);
  }

  /** Runs a turn on the types' entity and waits for it: for the types thread and start-up. */
  private TurnOutcome writeTypes(Turn turn) {
    return Futures.join(
        typedTurns.run(TYPES_ENTITY, CompiledType.schemaless(Troupe.SYSTEM_TYPE), turn));
  }

  /** At start, before serving: finishes the discard migrations a crash interrupted. */
  void resumePendingMigrations() {
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

  Optional<TypeSpec> type(String name) {
    if (!declaredTypes.containsKey(name) && sharedRefreshNanos > 0 && lookUpUndeclared(name)) {
      refreshFromSharedStore();
    }
    return Optional.ofNullable(declaredTypes.get(name)).map(declared -> declared.type().spec());
  }

  /** Every declared type, as a client lists them: on a cluster member, the shared store's too. */
  List<TypeSpec> listedTypes() {
    if (sharedRefreshNanos > 0) {
      refreshFromSharedStore();
    }
    return types();
  }

  List<TypeSpec> types() {
    return declaredTypes.values().stream().map(declared -> declared.type().spec())
        .sorted(Comparator.comparing(TypeSpec::name)).toList();
  }

  /**
   * An entity's latest state for the registry's own reads: from the cache on a node with a store
   * of its own; on a member of a cluster from the shared store, whoever hosts the entity (the
   * types' entity lives in one partition, hosted by one member).
   */
  private EntityState readDefinitionsOrEntity(EntityId entity) {
    return sharedRefreshNanos > 0 ? store.readLatestDurable(entity) : store.read(entity);
  }

  /**
   * Shared store only: declares what the store's definitions hold that this member does not have
   * yet (declared on another member). Newer definitions win, as for {@link
   * #loadReplicatedDefinitions}.
   */
  private void refreshFromSharedStore() {
    EntityState state = store.readLatestDurable(TYPES_ENTITY);
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      String name = entry.getKey();
      if (name.startsWith("$") || name.startsWith(MIGRATION_KEY_PREFIX)) {
        continue;
      }
      Declared known = declaredTypes.get(name);
      if (known != null && known.version() >= state.version()) {
        continue;
      }
      try {
        declare(name, CompiledType.compile(SpecParser.fromJson(name, entry.getValue().toJson())),
            state.version());
      } catch (RuntimeException e) {
        log.error("the stored definition of type {} cannot be used here: {}", name,
            e.getMessage());
      }
    }
  }

  /**
   * Shared store only: whether {@code name}, undeclared here, should be looked up in the store
   * now (never looked up, or looked up longer than the refresh interval ago); records the lookup.
   */
  private boolean lookUpUndeclared(String name) {
    long now = System.nanoTime();
    synchronized (undeclaredCheckedAt) {
      Long checked = undeclaredCheckedAt.get(name);
      if (checked != null && now - checked < sharedRefreshNanos) {
        return false;
      }
      undeclaredCheckedAt.put(name, now);
      return true;
    }
  }

  /** At start: the stored definitions, and the migrations a crash left unfinished. */
  void loadTypes() {
    EntityState state = readDefinitionsOrEntity(TYPES_ENTITY);
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      if (entry.getKey().startsWith("$")) {
        // A hidden key, never a type (their names never start with '$'): the marker of another
        // DC's type definitions applied here, or of an installed bootstrap image.
        continue;
      }
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

  /** Whether {@code entity} is the entity that stores the type definitions. */
  boolean holdsDefinitions(EntityId entity) {
    return TYPES_ENTITY.equals(entity);
  }

  /**
   * After another DC's write to the types' entity was applied here: declares every definition it
   * holds that is newer than the one served (last writer wins per type, as the register does).
   * Migration records are the origin's business (it rewrites the entities, and those rewrites
   * replicate as ordinary writes), so they are not resumed here.
   */
  void loadReplicatedDefinitions() {
    EntityState state = readDefinitionsOrEntity(TYPES_ENTITY);
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      String name = entry.getKey();
      if (ReplicaApplication.isMarkerKey(name) || name.startsWith(MIGRATION_KEY_PREFIX)
          || name.startsWith("$")) {
        continue;
      }
      try {
        declare(name, CompiledType.compile(SpecParser.fromJson(name, entry.getValue().toJson())),
            state.version());
      } catch (RuntimeException e) {
        // A definition this version cannot compile (a newer DC's): keep serving the one we have.
        log.error("the replicated definition of type {} cannot be used here: {}", name,
            e.getMessage());
      }
    }
  }

  /**
   * An entity's type: its declared one, or a schemaless one. A schemaless type compiles to a few
   * objects (no keys, no actions), so it is built per use rather than cached: a cache keyed by
   * client-chosen type names would need a bound of its own. Reserved types are refused.
   */
  CompiledType typeOf(EntityId entity) {
    if (entity.type().startsWith("$")) {
      throw TroupeException.invalid(
          "entity types starting with '$' are reserved: " + entity.type());
    }
    Declared declared = declaredTypes.get(entity.type());
    if (declared == null && sharedRefreshNanos > 0 && lookUpUndeclared(entity.type())) {
      refreshFromSharedStore();
      declared = declaredTypes.get(entity.type());
    }
    return declared != null ? declared.type() : schemaless(entity.type());
  }

  /**
   * Slots of {@link #schemalessTypes}: a fixed, small table (a few KB at most), not a setting, as
   * a miss costs only a compilation (what every request paid before).
   */
  private static final int SCHEMALESS_TYPE_SLOTS = 64;
  /**
   * The schemaless types of undeclared names compiled last, one per slot by the name's hash: a
   * request on an undeclared type compiled it anew every time (issue 20: a seventh of a cached
   * read's own work under YCSB C, with the rendered-state memo's spec comparison it caused).
   * Compiled types are immutable, so sharing one is the same as compiling an equal one.
   */
  private final java.util.concurrent.atomic.AtomicReferenceArray<CompiledType> schemalessTypes =
      new java.util.concurrent.atomic.AtomicReferenceArray<>(SCHEMALESS_TYPE_SLOTS);

  /** The schemaless type named {@code name}, compiled once while its slot keeps it. */
  private CompiledType schemaless(String name) {
    int slot = name.hashCode() & (SCHEMALESS_TYPE_SLOTS - 1);
    CompiledType held = schemalessTypes.get(slot);
    if (held != null && held.name().equals(name)) {
      return held;
    }
    CompiledType compiled = CompiledType.schemaless(name);
    schemalessTypes.set(slot, compiled);
    return compiled;
  }

  /** Keeps the newest definition whatever order concurrent definitions' answers arrive in. */
  /** Whether any turn so far may have sent a causal message (see {@link #sendingTypeDeclared}). */
  boolean mayHaveSentMessages() {
    return sendingTypeDeclared;
  }

  private void declare(String name, CompiledType type, long version) {
    if (type.spec().actions().values().stream().anyMatch(action -> !action.send().isEmpty())) {
      sendingTypeDeclared = true; // before the type can run: set before it enters the map
    }
    declaredTypes.merge(name, new Declared(type, version), (current, candidate) -> {
      if (candidate.version() > current.version()) {
        replacedTypes.put(name, current);
        return candidate;
      }
      return current;
    });
  }

  /**
   * How a message names {@code type} on the wire (docs/ARCHITECTURE.md, "Wire formats between
   * cores"): a schemaless type (the reserved ones included) by its name at version 0, a declared
   * one by the commit timestamp of the definition it was compiled from. A type older than the one
   * the current definition replaced has no version any node still serves: -1, which every
   * receiver refuses with {@code unknown_type} (the sender's request fails or retries, as for a
   * definition not yet loaded there).
   */
  dev.troupe.txn.wire.TypeReference referenceOf(CompiledType type) {
    if (type.isSchemaless()) {
      return new dev.troupe.txn.wire.TypeReference(type.name(), 0);
    }
    for (Declared declared : new Declared[] {
        declaredTypes.get(type.name()), replacedTypes.get(type.name())}) {
      if (declared != null && declared.type() == type) {
        return new dev.troupe.txn.wire.TypeReference(type.name(), declared.version());
      }
    }
    return new dev.troupe.txn.wire.TypeReference(type.name(), -1);
  }

  /**
   * The receiving side of {@link #referenceOf}: version 0 is the schemaless type of that name
   * (what the sender used, whether or not a definition was declared since), any other version the
   * current definition or the one it replaced when it was compiled from exactly that version.
   */
  @Override
  public Optional<CompiledType> find(String name, long version) {
    if (version == 0) {
      return Optional.of(CompiledType.schemaless(name));
    }
    Optional<CompiledType> found = findDeclared(name, version);
    if (found.isEmpty() && sharedRefreshNanos > 0) {
      // Sent by a member that knows a definition this one has not read yet: it is durable in
      // the shared store (a declaration is answered only once it committed).
      refreshFromSharedStore();
      found = findDeclared(name, version);
    }
    return found;
  }

  private Optional<CompiledType> findDeclared(String name, long version) {
    for (Declared declared : new Declared[] {declaredTypes.get(name), replacedTypes.get(name)}) {
      if (declared != null && declared.version() == version) {
        return Optional.of(declared.type());
      }
    }
    return Optional.empty();
  }

  void close() {
    typeExecutor.shutdownNow();
  }
}
