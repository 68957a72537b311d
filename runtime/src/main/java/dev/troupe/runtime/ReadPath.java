package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.StateProjection;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.storage.CachedState;
import dev.troupe.storage.Store;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The read path: committed states without an actor hop. A cached entity is read on the caller's
 * thread (the common, fast case); any other read runs on a bounded pool of materialization
 * threads, refused with {@code overloaded} when its queue is full and {@code unavailable} when the
 * heap is. An entity this node does not serve is read at its node ({@link RemoteReads}). The
 * contracts are {@link Troupe}'s read methods'.
 */
final class ReadPath {
  private final Store store;
  private final Function<EntityId, CompiledType> typeOf;
  private final RenderedStates renderedStates;
  private final int queueLimit;
  private final ExecutorService materializationExecutor;
  /** The engine's admission check (closed, failed); throws {@link TroupeException}. */
  private final Runnable checkOpen;
  private volatile MemoryWatch memory;
  /** Reads of entities this node does not serve (null until the transport exists: all here). */
  private volatile RemoteReads remote;

  ReadPath(RuntimeSettings settings, Store store, Function<EntityId, CompiledType> typeOf,
      RenderedStates renderedStates, Runnable checkOpen) {
    this.store = store;
    this.typeOf = typeOf;
    this.renderedStates = renderedStates;
    this.checkOpen = checkOpen;
    this.queueLimit = settings.materializationQueueLimit();
    this.materializationExecutor = new ThreadPoolExecutor(
        settings.materializationThreads(), settings.materializationThreads(), 0,
        TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(queueLimit),
        Thread.ofPlatform().name("troupe-materialize-", 0).daemon(true).factory());
  }

  /** Where reads of other nodes' entities go (set once the transport exists, before serving). */
  void useRemote(RemoteReads remote) {
    this.remote = remote;
  }

  /**
   * For a read another node asks of this node's entity ({@link RemoteReads#serve}): its committed
   * state, the latest ({@code timestamp} 0) or as of {@code timestamp}, whether it exists or not.
   * Cached: on the caller's thread; otherwise on the materialization pool (its bounds apply).
   */
  CompletableFuture<EntityState> stateOf(EntityId entity, long timestamp) {
    try {
      checkOpen.run();
      if (timestamp != 0) {
        return materialize(() -> store.readAt(entity, timestamp));
      }
      return store.isCached(entity)
          ? CompletableFuture.completedFuture(store.read(entity))
          : materialize(() -> store.read(entity));
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * An entity's committed state, the latest ({@code timestamp} 0) or as of {@code timestamp},
   * whether it exists or not, wherever it is served (another node's entity at its node, as {@link
   * #readAt}): what a listing filters its candidates with ({@link EntityListing}).
   */
  CompletableFuture<EntityState> stateAnywhere(EntityId entity, long timestamp) {
    try {
      checkOpen.run();
      RemoteReads remoteReads = remote;
      if (remoteReads != null && !remoteReads.isHere(entity)) {
        return remoteReads.read(entity, timestamp);
      }
      return atOwnerIfNotOwned(entity, timestamp, stateOf(entity, timestamp),
          Function.identity());
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * What a listing found of one entity: the object cache's entry ({@code cached}: the latest state
   * here, not decoded) or a decoded state (another node's, one as of a timestamp, a cache miss).
   */
  record Found(CachedState cached, EntityState state) {
    boolean exists() {
      return cached != null ? cached.exists() : state.exists();
    }

    long version() {
      return cached != null ? cached.version() : state.version();
    }
  }

  /**
   * {@link #stateAnywhere}, a cached latest state here taken as the cache's entry, not decoded (its
   * rendering is then a memo hit when the entity was rendered at this version before).
   */
  CompletableFuture<Found> foundAnywhere(EntityId entity, long timestamp) {
    try {
      checkOpen.run();
      RemoteReads remoteReads = remote;
      if (timestamp == 0 && (remoteReads == null || remoteReads.isHere(entity))
          && store.isCached(entity)) {
        return CompletableFuture.completedFuture(new Found(store.readCached(entity), null));
      }
    } catch (TroupeException refused) {
      if (refused.code() != ErrorCode.NOT_OWNER) {
        return CompletableFuture.failedFuture(refused);
      }
      // Its partition moved: the general path asks the entity's node.
    }
    return stateAnywhere(entity, timestamp).thenApply(state -> new Found(null, state));
  }

  /** The entity's state as its type renders it (JSON bytes; memoized per state object). */
  byte[] render(EntityId entity, Found found) {
    CompiledType type = typeOf.apply(entity);
    return found.cached() != null
        ? renderedStates.render(type, found.cached())
        : renderedStates.render(type, found.state());
  }

  /**
   * Runs a blocking storage read (a page of the listing index: a range read, on a shared
   * database a round trip) on the materialization pool, under its bounds, never on the caller's
   * (an HTTP or actor) thread.
   */
  <T> CompletableFuture<T> onStoragePool(Supplier<T> read) {
    try {
      checkOpen.run();
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return materialize(read);
  }

  /** The memory budget's refusals (set once the budget's shell exists, before serving). */
  void useMemory(MemoryWatch memory) {
    this.memory = memory;
  }

  CompletableFuture<EntityView> get(EntityId entity) {
    return readLatest(entity, (type, state) -> new EntityView(entity, type.render(state),
        state.version()));
  }

  /** The keys {@code projection} names of the latest committed state, as a JSON tree. */
  CompletableFuture<EntityView> get(EntityId entity, StateProjection projection) {
    return readLatest(entity, (type, state) -> new EntityView(entity,
        type.render(state, projection), state.version()));
  }

  CompletableFuture<Troupe.RenderedEntity> getRendered(EntityId entity) {
    // A local read meets the cached entry itself: a hot entity's JSON is a memo hit, nothing
    // decoded; a miss decodes the state once to render it.
    return readLatest(entity, (type, state) ->
        new Troupe.RenderedEntity(entity, renderedStates.render(type, state), state.version()),
        (type, cached) ->
            new Troupe.RenderedEntity(entity, renderedStates.render(type, cached),
                cached.version()));
  }

  /** The keys {@code projection} names of the latest committed state, as JSON bytes. */
  CompletableFuture<Troupe.RenderedEntity> getProjected(EntityId entity,
      StateProjection projection) {
    return readLatest(entity, (type, state) -> new Troupe.RenderedEntity(entity,
        Json.writeBytes(type.render(state, projection)), state.version()));
  }

  CompletableFuture<JsonNode> getKey(EntityId entity, String key) {
    return readLatest(entity, (type, state) -> {
      JsonNode value = type.renderValue(key, state);
      if (value == null) {
        throw new TroupeException(ErrorCode.NOT_FOUND, entity + " has no key '" + key + "'");
      }
      return value;
    });
  }

  CompletableFuture<EntityView> readAt(EntityId entity, long timestamp) {
    return readAt(entity, timestamp, null);
  }

  /** {@link #readAt(EntityId, long)} rendering only the keys {@code projection} names (null: all). */
  CompletableFuture<EntityView> readAt(EntityId entity, long timestamp,
      StateProjection projection) {
    try {
      checkOpen.run();
      CompiledType type = typeOf.apply(entity);
      Function<EntityState, EntityView> view = state -> {
        if (!state.exists()) {
          throw new TroupeException(ErrorCode.NOT_FOUND, entity + " did not exist at " + timestamp);
        }
        return new EntityView(entity,
            projection == null ? type.render(state) : type.render(state, projection),
            state.version());
      };
      RemoteReads remoteReads = remote;
      if (remoteReads != null && !remoteReads.isHere(entity)) {
        return remoteReads.read(entity, timestamp).thenApply(view);
      }
      return atOwnerIfNotOwned(entity, timestamp,
          materialize(() -> view.apply(store.readAt(entity, timestamp))), view);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  CompletableFuture<Dependency> dependency(String id) {
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
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (cause instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND) {
        return CompletableFuture.failedFuture(new TroupeException(ErrorCode.NOT_FOUND,
            "no dependency " + id + " is registered"));
      }
      return CompletableFuture.failedFuture(cause);
    });
  }

  CompletableFuture<Troupe.EntityDependencies> dependencies(EntityId entity) {
    return readLatest(entity, (type, state) -> {
      TreeMap<String, Dependency> leads = new TreeMap<>();
      TreeMap<String, DependencyTable.Entry> follows = new TreeMap<>();
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
      return new Troupe.EntityDependencies(entity, List.copyOf(leads.values()),
          List.copyOf(follows.values()), state.version());
    });
  }

  /**
   * Reads the latest durable state: on the caller's thread when cached (the common, fast case),
   * otherwise on a materialization thread.
   */
  private <T> CompletableFuture<T> readLatest(
      EntityId entity, BiFunction<CompiledType, EntityState, T> view) {
    return readLatest(entity, view, null);
  }

  /**
   * {@link #readLatest(EntityId, BiFunction)}, a local read taking {@code cachedView} of the
   * cached entry (not decoded) when one is given.
   */
  private <T> CompletableFuture<T> readLatest(
      EntityId entity, BiFunction<CompiledType, EntityState, T> view,
      BiFunction<CompiledType, CachedState, T> cachedView) {
    try {
      checkOpen.run();
      CompiledType type = typeOf.apply(entity);
      Function<EntityState, T> checked = state -> {
        if (!state.exists()) {
          throw new TroupeException(ErrorCode.NOT_FOUND, entity + " does not exist");
        }
        return view.apply(type, state);
      };
      RemoteReads remoteReads = remote;
      if (remoteReads != null && !remoteReads.isHere(entity)) {
        // Another node serves it: only the owner's cache follows every commit.
        return remoteReads.read(entity, 0).thenApply(checked);
      }
      Supplier<T> read = cachedView == null
          ? () -> checked.apply(store.read(entity))
          : () -> viewOfCached(entity, type, store.readCached(entity), cachedView);
      CompletableFuture<T> local;
      try {
        if (cachedView != null) {
          // One lookup of the object cache: found, read here; absent, loaded on the pool.
          CachedState cached = store.readCachedIfPresent(entity);
          local = cached != null
              ? CompletableFuture.completedFuture(viewOfCached(entity, type, cached, cachedView))
              : materialize(read);
        } else {
          local = store.isCached(entity)
              ? CompletableFuture.completedFuture(read.get())
              : materialize(read);
        }
      } catch (TroupeException refused) {
        local = CompletableFuture.failedFuture(refused);
      }
      return atOwnerIfNotOwned(entity, 0, local, checked);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@code cachedView} of an existing entity's cached entry; {@code not_found} if it does not exist. */
  private static <T> T viewOfCached(EntityId entity, CompiledType type, CachedState cached,
      BiFunction<CompiledType, CachedState, T> cachedView) {
    if (!cached.exists()) {
      throw new TroupeException(ErrorCode.NOT_FOUND, entity + " does not exist");
    }
    return cachedView.apply(type, cached);
  }

  /**
   * A read this node's store refused with {@code not_owner} (its partition is owned by another
   * node, e.g. just moved, while this node still thought it hosted it) is asked of the entity's
   * node instead. That node serves it from its own store and never forwards it again ({@link
   * #stateOf}), so a read that finds no owner ends as {@code not_owner} (a 503 to retry), never a
   * loop.
   */
  private <T> CompletableFuture<T> atOwnerIfNotOwned(EntityId entity, long timestamp,
      CompletableFuture<T> local, Function<EntityState, T> view) {
    RemoteReads remoteReads = remote;
    if (remoteReads == null) {
      return local;
    }
    return local.exceptionallyCompose(failure -> {
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (cause instanceof TroupeException error && error.code() == ErrorCode.NOT_OWNER) {
        return remoteReads.read(entity, timestamp).thenApply(view);
      }
      return CompletableFuture.failedFuture(cause);
    });
  }

  /**
   * Runs a read on the materialization pool; a full queue is {@code overloaded}, a full heap
   * {@code unavailable}.
   */
  private <T> CompletableFuture<T> materialize(Supplier<T> read) {
    try {
      // A cold read allocates a whole state; a cached one only its rendering.
      memory.refuseIfShort();
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    try {
      return CompletableFuture.supplyAsync(read, materializationExecutor);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          queueLimit + " reads already wait for storage; retry later"));
    }
  }

  void shutdown() {
    materializationExecutor.shutdown();
  }

  void shutdownNow() {
    materializationExecutor.shutdownNow();
  }
}
