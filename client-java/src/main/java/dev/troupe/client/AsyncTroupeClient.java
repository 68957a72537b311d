package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The asynchronous face of a {@link TroupeClient} ({@link TroupeClient#async()}): the same
 * operations, each returning a {@link CompletableFuture} that completes with the result or
 * exceptionally with the {@link TroupeClientException} the blocking method would throw. Requests
 * go out with the JDK HttpClient's {@code sendAsync}; retries wait on a delayed executor, never
 * on a caller's thread. The retry policy, idempotency keys and causal token are the blocking
 * client's (one core decides for both), so the two faces behave alike.
 *
 * <p>Concurrency: safe to share; any number of calls may be in flight (the causal token merges
 * answers arriving in any order). Closed with its {@link TroupeClient}.
 */
public final class AsyncTroupeClient {
  private final ClientCore core;

  AsyncTroupeClient(ClientCore core) {
    this.core = core;
  }

  /** The newest causal token the server sent, merged per data centre. */
  public Optional<String> causalToken() {
    return core.causalToken();
  }

  /** As {@link TroupeClient#get(String,String)}, as a future. */
  public CompletableFuture<EntityState> get(String type, String id) {
    return core.runAsync(Calls.getEntity(type, id, null));
  }

  /** As {@link TroupeClient#get(String,String,long)}, as a future. */
  public CompletableFuture<EntityState> get(String type, String id, long at) {
    return core.runAsync(Calls.getEntity(type, id, at));
  }

  /** As {@link TroupeClient#get(String,String,java.util.List)}, as a future. */
  public CompletableFuture<EntityState> get(String type, String id,
      java.util.List<String> projection) {
    return core.runAsync(Calls.getEntity(type, id, null, projection));
  }

  /** As {@link TroupeClient#patch(String,String,Map,java.util.List)}, as a future. */
  public CompletableFuture<Written> patch(String type, String id, Map<String, ?> values,
      java.util.List<String> projection) {
    return core.runAsync(Calls.projected(Calls.patch(type, id, values), projection));
  }

  /** As {@link TroupeClient#act(String,String,String,Map,java.util.List)}, as a future. */
  public CompletableFuture<Written> act(String type, String id, String action,
      Map<String, ?> args, java.util.List<String> projection) {
    return core.runAsync(Calls.projected(Calls.act(type, id, action, args), projection));
  }

  /** As {@link TroupeClient#patch(String,String,Map)}, as a future. */
  public CompletableFuture<Written> patch(String type, String id, Map<String, ?> values) {
    return core.runAsync(Calls.patch(type, id, values));
  }

  /** As {@link TroupeClient#delete(String,String)}, as a future. */
  public CompletableFuture<Written> delete(String type, String id) {
    return core.runAsync(Calls.deleteEntity(type, id));
  }

  /** As {@link TroupeClient#getKey(String,String,String)}, as a future. */
  public CompletableFuture<JsonNode> getKey(String type, String id, String key) {
    return core.runAsync(Calls.getKey(type, id, key));
  }

  /** As {@link TroupeClient#putKey(String,String,String,Object)}, as a future. */
  public CompletableFuture<Written> putKey(String type, String id, String key, Object value) {
    return core.runAsync(Calls.putKey(type, id, key, value));
  }

  /** As {@link TroupeClient#deleteKey(String,String,String)}, as a future. */
  public CompletableFuture<Written> deleteKey(String type, String id, String key) {
    return core.runAsync(Calls.deleteKey(type, id, key));
  }

  /** As {@link TroupeClient#increment(String,String,String,long)}, as a future. */
  public CompletableFuture<Written> increment(String type, String id, String key, long by) {
    return core.runAsync(Calls.increment(type, id, key, by));
  }

  /** As {@link TroupeClient#add(String,String,String,Object)}, as a future. */
  public CompletableFuture<Written> add(String type, String id, String key, Object element) {
    return core.runAsync(Calls.addElement(type, id, key, element));
  }

  /** As {@link TroupeClient#remove(String,String,String,Object)}, as a future. */
  public CompletableFuture<Written> remove(String type, String id, String key, Object element) {
    return core.runAsync(Calls.removeElement(type, id, key, element));
  }

  /** As {@link TroupeClient#increment(String,String,String,long,java.util.List)}, as a future. */
  public CompletableFuture<Written> increment(String type, String id, String key, long by,
      java.util.List<String> projection) {
    return core.runAsync(Calls.projected(Calls.increment(type, id, key, by), projection));
  }

  /** As {@link TroupeClient#add(String,String,String,Object,java.util.List)}, as a future. */
  public CompletableFuture<Written> add(String type, String id, String key, Object element,
      java.util.List<String> projection) {
    return core.runAsync(Calls.projected(Calls.addElement(type, id, key, element), projection));
  }

  /** As {@link TroupeClient#remove(String,String,String,Object,java.util.List)}, as a future. */
  public CompletableFuture<Written> remove(String type, String id, String key, Object element,
      java.util.List<String> projection) {
    return core.runAsync(Calls.projected(Calls.removeElement(type, id, key, element),
        projection));
  }

  /** As {@link TroupeClient#act(String,String,String,Map)}, as a future. */
  public CompletableFuture<Written> act(String type, String id, String action,
      Map<String, ?> args) {
    return core.runAsync(Calls.act(type, id, action, args));
  }

  /** As {@link TroupeClient#entityVersions(String,String)}, as a future. */
  public CompletableFuture<EntityVersions> entityVersions(String type, String id) {
    return core.runAsync(Calls.entityVersions(type, id, null, null));
  }

  /** As {@link TroupeClient#entityVersions(String,String,Long,Integer)}, as a future. */
  public CompletableFuture<EntityVersions> entityVersions(String type, String id, Long before,
      Integer limit) {
    return core.runAsync(Calls.entityVersions(type, id, before, limit));
  }

  /** As {@link TroupeClient#listEntities(String,ListQuery)}, as a future. */
  public CompletableFuture<EntityPage> listEntities(String type, ListQuery query) {
    return core.runAsync(Calls.listEntities(type, query));
  }

  /** As {@link TroupeClient#listTypes()}, as a future. */
  public CompletableFuture<List<ObjectNode>> listTypes() {
    return core.runAsync(Calls.listTypes());
  }

  /** As {@link TroupeClient#getType(String)}, as a future. */
  public CompletableFuture<ObjectNode> getType(String type) {
    return core.runAsync(Calls.getType(type));
  }

  /** As {@link TroupeClient#putType(String,String)}, as a future. */
  public CompletableFuture<ObjectNode> putType(String type, String yamlSpec) {
    return core.runAsync(Calls.putType(type, yamlSpec, null));
  }

  /** As {@link TroupeClient#putType(String,Map)}, as a future. */
  public CompletableFuture<ObjectNode> putType(String type, Map<String, ?> spec) {
    return core.runAsync(Calls.putType(type, spec, null));
  }

  /** As {@link TroupeClient#putType(String,Object,String)}, as a future. */
  public CompletableFuture<ObjectNode> putType(String type, Object spec, String migration) {
    return core.runAsync(
        Calls.putType(type, spec, Objects.requireNonNull(migration, "migration")));
  }

  /** As {@link TroupeClient#transact(List)}, as a future. */
  public CompletableFuture<TransactionResult> transact(List<Operation> operations) {
    return transact(operations, List.of(), null);
  }

  /** As {@link TroupeClient#transact(List,List,String)}, as a future. */
  public CompletableFuture<TransactionResult> transact(List<Operation> operations,
      List<String> reads, String mode) {
    return core.runAsync(Calls.transact(operations, reads, mode));
  }

  /** As {@link TroupeClient#snapshotRead(List)}, as a future. */
  public CompletableFuture<SnapshotRead> snapshotRead(List<String> entities) {
    return core.runAsync(Calls.snapshotRead(entities));
  }

  /**
   * Begins an interactive transaction. Nothing closes it for you here: end it with {@link
   * AsyncInteractiveTransaction#commit()} or {@link AsyncInteractiveTransaction#abort()} (the
   * server ends one left idle after its idle timeout).
   */
  public CompletableFuture<AsyncInteractiveTransaction> begin() {
    return core.runAsync(Calls.begin())
        .thenApply(txId -> new AsyncInteractiveTransaction(core, txId));
  }

  /** As {@link TroupeClient#registerDependency(String,KeyReference,KeyReference,String)}, as a future. */
  public CompletableFuture<DependencyRegistration> registerDependency(String kind,
      KeyReference leader, KeyReference follower, String function) {
    return core.runAsync(Calls.registerDependency(kind, leader, follower, function));
  }

  /** As {@link TroupeClient#getDependency(String)}, as a future. */
  public CompletableFuture<Dependency> getDependency(String dependencyId) {
    return core.runAsync(Calls.getDependency(dependencyId));
  }

  /** As {@link TroupeClient#deregisterDependency(String)}, as a future. */
  public CompletableFuture<Long> deregisterDependency(String dependencyId) {
    return core.runAsync(Calls.deregisterDependency(dependencyId));
  }

  /** As {@link TroupeClient#entityDependencies(String,String)}, as a future. */
  public CompletableFuture<EntityDependencies> entityDependencies(String type, String id) {
    return core.runAsync(Calls.entityDependencies(type, id));
  }

  /** As {@link TroupeClient#health()}, as a future. */
  public CompletableFuture<ObjectNode> health() {
    return core.runAsync(Calls.health());
  }
}
