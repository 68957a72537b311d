package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;

/**
 * A client of one Troupe server (or data centre) over its REST API ({@code /v1}), blocking: every
 * method sends its request (retrying within the {@link RetryPolicy}) and returns the result, or
 * throws the {@link TroupeClientException} subclass of the server's error code. {@link #async()}
 * is the same client with methods that return {@code CompletableFuture}s; both share this
 * client's connections, retry policy and causal token.
 *
 * <p>Entities are named by type and id, or as {@code Type/id} inside transactions. Values are
 * JSON: results carry Jackson {@code JsonNode}s, arguments are anything Jackson turns into JSON
 * (a {@code JsonNode}, a {@code Map}, a string, a number, a list, ...).
 *
 * <p><b>Retries with idempotency keys.</b> Every write that accepts an {@code Idempotency-Key}
 * (entity and key writes, actions, {@link #transact}, an interactive commit, dependency
 * (de)registration) gets a fresh key, and is sent again <em>with the same key</em> after a lost
 * connection, {@code 429}, a {@code 503} or {@code 500 outcome_unknown}: the server runs it at
 * most once and replays the first answer ({@link Written#replayed()}). See {@link RetryPolicy}
 * for what else is retried.
 *
 * <p><b>Causal token.</b> A server of a named data centre sends {@code Troupe-Causal-Token} with
 * every answer; the client keeps the newest (per data centre, the highest timestamp) and sends it
 * with every later request, so the session's reads see its own writes in any data centre. {@link
 * Builder#causalToken} starts a client from another's {@link #causalToken()}.
 *
 * <p>Concurrency: safe to share between threads. {@link #close()} it (or use try-with-resources)
 * to release its connections.
 */
public final class TroupeClient implements AutoCloseable {
  /** Default of {@link Builder#connectTimeout}: 10 s. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);
  /** Default of {@link Builder#requestTimeout}: 30 s for each attempt. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);

  private final ClientCore core;
  private final AsyncTroupeClient async;

  private TroupeClient(ClientCore core) {
    this.core = core;
    this.async = new AsyncTroupeClient(core);
  }

  /** A builder of a client of the server at {@code baseUrl}, e.g. {@code http://127.0.0.1:8080}. */
  public static Builder builder(String baseUrl) {
    return new Builder(URI.create(Objects.requireNonNull(baseUrl, "baseUrl")));
  }

  /** A client of the server at {@code baseUrl} with every setting at its default. */
  public static TroupeClient connect(String baseUrl) {
    return builder(baseUrl).build();
  }

  /** The settings of a client; every one has a default (the constants named on each). */
  public static final class Builder {
    private final URI baseUri;
    private String token;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private RetryPolicy retryPolicy = RetryPolicy.DEFAULT;
    private String causalToken;
    private java.util.concurrent.Executor executor;

    private Builder(URI baseUri) {
      if (baseUri.getScheme() == null || baseUri.getHost() == null) {
        throw new IllegalArgumentException("a base URL like http://127.0.0.1:8080 is needed: "
            + baseUri);
      }
      this.baseUri = baseUri;
    }

    /** A bearer token sent with every request (null or blank: none; the default). */
    public Builder token(String bearerToken) {
      this.token = bearerToken;
      return this;
    }

    /** Bound on opening a connection (default {@link #DEFAULT_CONNECT_TIMEOUT}). */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive(timeout, "connectTimeout");
      return this;
    }

    /**
     * Bound on each attempt, from sending the request to having its answer (default {@link
     * #DEFAULT_REQUEST_TIMEOUT}); an attempt that exceeds it counts as no answer.
     */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = positive(timeout, "requestTimeout");
      return this;
    }

    /** Bounds on retries (default {@link RetryPolicy#DEFAULT}; {@link RetryPolicy#NONE}: none). */
    public Builder retry(RetryPolicy policy) {
      this.retryPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** A causal token to start from, another client's {@link #causalToken()} (default none). */
    public Builder causalToken(String token) {
      this.causalToken = token;
      return this;
    }

    /**
     * The executor the JDK HttpClient runs its tasks on, and the asynchronous face's futures
     * complete on (default: the HttpClient's own, a cached thread pool). Code chained on those
     * futures runs there: it must not block a small or direct executor.
     */
    public Builder executor(java.util.concurrent.Executor tasks) {
      this.executor = Objects.requireNonNull(tasks, "tasks");
      return this;
    }

    /** The client, with these settings. */
    public TroupeClient build() {
      return new TroupeClient(new ClientCore(baseUri, token, connectTimeout, requestTimeout,
          retryPolicy, causalToken, executor));
    }

    private static Duration positive(Duration value, String name) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException(name + " must be positive: " + value);
      }
      return value;
    }
  }

  /** The same client, with methods that return futures (sharing connections and causal token). */
  public AsyncTroupeClient async() {
    return async;
  }

  /** The newest causal token the server sent, merged per data centre (sent with every request). */
  public Optional<String> causalToken() {
    return core.causalToken();
  }

  /** The server's address this client sends to. */
  public URI baseUri() {
    return core.baseUri();
  }

  // ---- Entities, keys and actions ----

  /** The entity's state now. */
  public EntityState get(String type, String id) {
    return core.run(Calls.getEntity(type, id, null));
  }

  /** The entity's state as of version {@code at} (within the history the server keeps). */
  public EntityState get(String type, String id, long at) {
    return core.run(Calls.getEntity(type, id, at));
  }

  /**
   * The keys {@code projection} names of the entity's state now, from one committed state (a
   * projection: {@code ?key=K}, repeated; an empty list answers no key, {@code ?state=none});
   * the server renders only those keys.
   */
  public EntityState get(String type, String id, List<String> projection) {
    return core.run(Calls.getEntity(type, id, null, projection));
  }

  /** Assigns the keys in one turn, creating the entity if needed. */
  public Written patch(String type, String id, Map<String, ?> values) {
    return core.run(Calls.patch(type, id, values));
  }

  /** {@link #patch(String,String,Map)} answering only the keys {@code projection} names. */
  public Written patch(String type, String id, Map<String, ?> values, List<String> projection) {
    return core.run(Calls.projected(Calls.patch(type, id, values), projection));
  }

  /** Deletes the entity. */
  public Written delete(String type, String id) {
    return core.run(Calls.deleteEntity(type, id));
  }

  /** One key's value. */
  public JsonNode getKey(String type, String id, String key) {
    return core.run(Calls.getKey(type, id, key));
  }

  /** Assigns one key (creating the entity if needed). */
  public Written putKey(String type, String id, String key, Object value) {
    return core.run(Calls.putKey(type, id, key, value));
  }

  /** Deletes one key (the entity stays, with its other keys). */
  public Written deleteKey(String type, String id, String key) {
    return core.run(Calls.deleteKey(type, id, key));
  }

  /** Adds {@code by} to a counter key. */
  public Written increment(String type, String id, String key, long by) {
    return core.run(Calls.increment(type, id, key, by));
  }

  /** {@link #increment(String,String,String,long)} answering only the keys named. */
  public Written increment(String type, String id, String key, long by,
      List<String> projection) {
    return core.run(Calls.projected(Calls.increment(type, id, key, by), projection));
  }

  /** Adds an element to a set key. */
  public Written add(String type, String id, String key, Object element) {
    return core.run(Calls.addElement(type, id, key, element));
  }

  /** {@link #add(String,String,String,Object)} answering only the keys named. */
  public Written add(String type, String id, String key, Object element,
      List<String> projection) {
    return core.run(Calls.projected(Calls.addElement(type, id, key, element), projection));
  }

  /** Removes an element from a set key. */
  public Written remove(String type, String id, String key, Object element) {
    return core.run(Calls.removeElement(type, id, key, element));
  }

  /** {@link #remove(String,String,String,Object)} answering only the keys named. */
  public Written remove(String type, String id, String key, Object element,
      List<String> projection) {
    return core.run(Calls.projected(Calls.removeElement(type, id, key, element), projection));
  }

  /** Runs a declared action of the entity's type with its parameters. */
  public Written act(String type, String id, String action, Map<String, ?> args) {
    return core.run(Calls.act(type, id, action, args));
  }

  /**
   * {@link #act(String,String,String,Map)} answering only the keys {@code projection} names
   * (e.g. the members the action touched; an empty list: no key, only the version).
   */
  public Written act(String type, String id, String action, Map<String, ?> args,
      List<String> projection) {
    return core.run(Calls.projected(Calls.act(type, id, action, args), projection));
  }

  /** The entity's newest versions still in the server's journal (the server's default limit). */
  public EntityVersions entityVersions(String type, String id) {
    return core.run(Calls.entityVersions(type, id, null, null));
  }

  /**
   * The entity's versions still in the server's journal, newest first: those below {@code
   * before} (a previous page's {@link EntityVersions#next()}; null: the newest), at most {@code
   * limit} (null: the server's default). Read each with {@link #get(String, String, long)} for
   * the entity's history.
   */
  public EntityVersions entityVersions(String type, String id, Long before, Integer limit) {
    return core.run(Calls.entityVersions(type, id, before, limit));
  }

  // ---- Listing ----

  /** One page of the type's entities in id order (see {@link ListQuery}). */
  public EntityPage listEntities(String type, ListQuery query) {
    return core.run(Calls.listEntities(type, query));
  }

  /**
   * Every entity of the type the query selects, following the pages' cursors lazily (the query's
   * limit per page; its {@code after} and {@code from} say where to start): each entity that
   * exists throughout is met exactly once.
   */
  public Iterable<ListedEntity> allEntities(String type, ListQuery query) {
    return () -> new Iterator<>() {
      private EntityPage page = listEntities(type, query);
      private int index;

      @Override
      public boolean hasNext() {
        while (index >= page.entities().size() && page.next().isPresent()) {
          page = listEntities(type, query.from(null).after(page.next().get()));
          index = 0;
        }
        return index < page.entities().size();
      }

      @Override
      public ListedEntity next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return page.entities().get(index++);
      }
    };
  }

  // ---- Types ----

  /** Every declared type's spec. */
  public List<ObjectNode> listTypes() {
    return core.run(Calls.listTypes());
  }

  /** A declared type's spec; {@link TroupeClientException.UnknownType} if none. */
  public ObjectNode getType(String type) {
    return core.run(Calls.getType(type));
  }

  /** Declares (or redeclares) a type from its spec as YAML text, as {@code troupe types apply}. */
  public ObjectNode putType(String type, String yamlSpec) {
    return core.run(Calls.putType(type, yamlSpec, null));
  }

  /** Declares a type from its spec as JSON (a {@code JsonNode} or a {@code Map}). */
  public ObjectNode putType(String type, Map<String, ?> spec) {
    return core.run(Calls.putType(type, spec, null));
  }

  /**
   * Redeclares a type with a migration named ({@code spec} YAML text, a {@code Map} or a {@code
   * JsonNode}), where the change would otherwise be refused as {@code incompatible_type}.
   */
  public ObjectNode putType(String type, Object spec, String migration) {
    return core.run(Calls.putType(type, spec, Objects.requireNonNull(migration, "migration")));
  }

  // ---- Transactions and snapshot reads ----

  /** A static transaction: all its operations, or none. */
  public TransactionResult transact(List<Operation> operations) {
    return transact(operations, List.of(), null);
  }

  /**
   * A static transaction that also reads {@code reads} ({@code Type/id}) at its snapshot;
   * {@code mode} as the server names it (null: the server's default).
   */
  public TransactionResult transact(List<Operation> operations, List<String> reads, String mode) {
    return core.run(Calls.transact(operations, reads, mode));
  }

  /** A consistent cut of the entities ({@code Type/id}). */
  public SnapshotRead snapshotRead(List<String> entities) {
    return core.run(Calls.snapshotRead(entities));
  }

  /**
   * Begins an interactive transaction: steps that see its own writes, then one {@link
   * InteractiveTransaction#commit()}. Use it with try-with-resources: closing it aborts it unless
   * it was committed.
   */
  public InteractiveTransaction begin() {
    return new InteractiveTransaction(core, core.run(Calls.begin()));
  }

  // ---- Dependencies ----

  /**
   * Registers a dependency: {@code kind} {@code update} with a {@code function}, or {@code delete}
   * (function null).
   */
  public DependencyRegistration registerDependency(String kind, KeyReference leader,
      KeyReference follower, String function) {
    return core.run(Calls.registerDependency(kind, leader, follower, function));
  }

  /** A registered dependency by its id. */
  public Dependency getDependency(String dependencyId) {
    return core.run(Calls.getDependency(dependencyId));
  }

  /** Deregisters a dependency; answers the id of the transaction that did. */
  public long deregisterDependency(String dependencyId) {
    return core.run(Calls.deregisterDependency(dependencyId));
  }

  /** The dependencies the entity leads and those it follows. */
  public EntityDependencies entityDependencies(String type, String id) {
    return core.run(Calls.entityDependencies(type, id));
  }

  /** The server's health ({@code GET /v1/health}). */
  public ObjectNode health() {
    return core.run(Calls.health());
  }

  /** Releases the client's connections (the {@link #async()} face's too). */
  @Override
  public void close() {
    core.close();
  }
}
