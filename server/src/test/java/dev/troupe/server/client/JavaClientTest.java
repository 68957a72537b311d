package dev.troupe.server.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.client.AsyncInteractiveTransaction;
import dev.troupe.client.DependencyRegistration;
import dev.troupe.client.EntityPage;
import dev.troupe.client.InteractiveTransaction;
import dev.troupe.client.KeyReference;
import dev.troupe.client.ListQuery;
import dev.troupe.client.ListedEntity;
import dev.troupe.client.Operation;
import dev.troupe.client.RetryPolicy;
import dev.troupe.client.SnapshotRead;
import dev.troupe.client.TransactionResult;
import dev.troupe.client.TroupeClient;
import dev.troupe.client.TroupeClientException;
import dev.troupe.client.Written;
import dev.troupe.model.ErrorCode;
import dev.troupe.server.ServerProcess;
import dev.troupe.server.contract.EntityContract;
import dev.troupe.server.client.AnswerLosingProxy.Answer;
import dev.troupe.server.client.AnswerLosingProxy.Seen;
import dev.troupe.server.http.Authorization;
import java.io.File;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client ({@code client-java}) against one real server, a named data centre that
 * requires bearer tokens (so it sends a real causal token with every answer), as the Python
 * client's tests run: every area of the API through both faces, typed errors, retries with one
 * idempotency key through {@link AnswerLosingProxy} (the write applied once), {@code
 * Retry-After}, the retry bounds, the causal token, and the README's example compiled and run as
 * printed; and the entity contract's cases ({@link EntityContract}) through the client ({@link
 * EntityContractThroughTheClient}), on the same server so the class starts one.
 */
class JavaClientTest {
  /** The REST tests' Account type, its name a placeholder. */
  private static final String ACCOUNT_YAML =
      dev.troupe.server.RestEndToEndTest.ACCOUNT_YAML.replace("type: Account", "type: %s");
  private static final String ACCOUNT = "Account";

  @TempDir static Path data;
  static ServerProcess server;
  static String token;
  static String readToken;
  static TroupeClient troupe;
  private final List<AutoCloseable> opened = new ArrayList<>();
  private String unique;

  @BeforeAll
  static void start() throws Exception {
    token = UUID.randomUUID().toString();
    readToken = UUID.randomUUID().toString();
    server = ServerProcess.start(data.resolve("node"), "troupe.dc.name=java-client",
        "troupe.http.auth.tokens=[" + token("java", token, "read, write, admin") + ", "
            + token("reader", readToken, "read") + "]");
    troupe = TroupeClient.builder(server.baseUrl()).token(token).build();
    troupe.putType(ACCOUNT, ACCOUNT_YAML.formatted(ACCOUNT));
  }

  @AfterAll
  static void stop() throws Exception {
    troupe.close();
    server.close();
  }

  @BeforeEach
  void name(TestInfo test) {
    unique = test.getTestMethod().orElseThrow().getName();
  }

  @org.junit.jupiter.api.AfterEach
  void closeOpened() throws Exception {
    for (AutoCloseable each : opened) {
      each.close();
    }
  }

  private static String token(String name, String secret, String scopes) {
    return "{name = " + name + ", sha256 = \"" + Authorization.sha256Hex(secret)
        + "\", scopes = [" + scopes + "]}";
  }

  /** A client (with every scope) through a proxy following {@code plan}. */
  private record Through(TroupeClient client, AnswerLosingProxy proxy) {}

  private Through through(Function<Seen, AnswerLosingProxy.Plan> plan, RetryPolicy retry,
      String causalToken) throws Exception {
    AnswerLosingProxy proxy = new AnswerLosingProxy(server.port(), plan);
    // More attempts than the default: on a loaded machine a retry may meet its first attempt
    // still recording its answer (409 conflict) a few times before it is replayed.
    TroupeClient client = TroupeClient.builder(proxy.url()).token(token).retry(retry)
        .causalToken(causalToken).requestTimeout(Duration.ofSeconds(10)).build();
    opened.add(proxy);
    opened.add(client);
    return new Through(client, proxy);
  }

  private Through through(Function<Seen, AnswerLosingProxy.Plan> plan) throws Exception {
    return through(plan, RetryPolicy.DEFAULT.withMaxAttempts(12), null);
  }

  private static String error(String code, String message) {
    return "{\"error\":\"" + code + "\",\"message\":\"" + message + "\"}";
  }

  // ---- Coverage through the blocking face ----

  @Test
  void typesActionsCountersAndSets() {
    ObjectNode declared = troupe.getType(ACCOUNT);
    assertEquals(ACCOUNT, declared.get("type").asText());
    assertTrue(troupe.listTypes().stream().anyMatch(spec -> spec.get("type").asText()
        .equals(ACCOUNT)));
    Written opened = troupe.act(ACCOUNT, unique, "open", Map.of("initial", 100));
    assertEquals(100, opened.state().orElseThrow().get("balance").asInt());
    assertEquals(105, troupe.act(ACCOUNT, unique, "deposit", Map.of("amount", 5)).state()
        .orElseThrow().get("balance").asInt());
    assertEquals(5, troupe.increment(ACCOUNT, unique, "logins", 5).state().orElseThrow()
        .get("logins").asInt());
    troupe.add(ACCOUNT, unique, "tags", "vip");
    troupe.add(ACCOUNT, unique, "tags", "new");
    assertEquals(2, troupe.getKey(ACCOUNT, unique, "tags").size());
    assertEquals("[\"vip\"]", troupe.remove(ACCOUNT, unique, "tags", "new").state()
        .orElseThrow().get("tags").toString());
    // A JSON null is a value too.
    troupe.putKey("Loose", unique, "nothing", null);
    assertTrue(troupe.getKey("Loose", unique, "nothing").isNull());
    assertEquals("ok", troupe.health().get("status").asText());
  }

  @Test
  void typedErrorsForBadInputAndMissingThings() {
    TroupeClientException.InvalidRequest empty = assertThrows(
        TroupeClientException.InvalidRequest.class, () -> troupe.patch("Loose", unique, Map.of()));
    assertEquals(400, empty.status());
    assertEquals("invalid_request", empty.code().orElseThrow());
    assertFalse(empty.serverMessage().isEmpty());
    assertThrows(TroupeClientException.InvalidRequest.class,
        () -> troupe.putKey("Loose", unique, "$reserved", 1));
    assertThrows(TroupeClientException.InvalidRequest.class,
        () -> troupe.listEntities("Loose", ListQuery.firstPage().limit(0)));
    assertThrows(TroupeClientException.InvalidRequest.class, () -> troupe.snapshotRead(List.of()));
    TroupeClientException.NotFound missing = assertThrows(TroupeClientException.NotFound.class,
        () -> troupe.get("Loose", unique + "-none"));
    assertEquals(404, missing.status());
    assertThrows(TroupeClientException.NotFound.class,
        () -> troupe.getKey("Loose", unique + "-none", "k"));
    assertThrows(TroupeClientException.UnknownType.class, () -> troupe.getType("Never" + unique));
    troupe.act(ACCOUNT, unique, "open", Map.of("initial", 10));
    TroupeClientException.PreconditionFailed refused = assertThrows(
        TroupeClientException.PreconditionFailed.class,
        () -> troupe.act(ACCOUNT, unique, "withdraw", Map.of("amount", 500)));
    assertEquals(409, refused.status());
    assertThrows(TroupeClientException.UnknownAction.class,
        () -> troupe.act(ACCOUNT, unique, "steal", Map.of()));
    assertThrows(TroupeClientException.IncompatibleType.class,
        () -> troupe.putType(ACCOUNT, Map.of("keys", Map.of("logins", Map.of("kind", "register")))));
    assertEquals(10, troupe.get(ACCOUNT, unique).state().get("balance").asInt(), "nothing changed");
    // Authentication: no token, and a token that may only read.
    try (TroupeClient anonymous = TroupeClient.connect(server.baseUrl());
        TroupeClient reader = TroupeClient.builder(server.baseUrl()).token(readToken).build()) {
      assertThrows(TroupeClientException.Unauthorized.class, () -> anonymous.get(ACCOUNT, unique));
      assertEquals(10, reader.get(ACCOUNT, unique).state().get("balance").asInt());
      assertThrows(TroupeClientException.Forbidden.class,
          () -> reader.putKey("Loose", unique, "a", 1));
    }
  }

  @Test
  void everyErrorCodeOfTheServerHasItsExceptionAndStatus() {
    Map<String, Integer> expected = Arrays.stream(ErrorCode.values()).collect(Collectors.toMap(
        ErrorCode::wireName, ErrorCode::httpStatus, (a, b) -> a, java.util.LinkedHashMap::new));
    assertEquals(expected, TroupeClientException.statusByCode());
    assertEquals(ErrorCode.values().length, Arrays.stream(TroupeClientException.class
        .getPermittedSubclasses()).filter(type -> !type.getSimpleName().equals("ConnectionFailed")
        && !type.getSimpleName().equals("UnexpectedAnswer")).count(), "one class per code");
    for (ErrorCode code : ErrorCode.values()) {
      String camel = Arrays.stream(code.wireName().split("_"))
          .map(part -> Character.toUpperCase(part.charAt(0)) + part.substring(1))
          .collect(Collectors.joining());
      assertTrue(Arrays.stream(TroupeClientException.class.getPermittedSubclasses())
          .anyMatch(type -> type.getSimpleName().equals(camel)), code + " has " + camel);
    }
  }

  @Test
  void listingFollowsCursorsAndReadsAtAVersion() {
    String type = "Listed" + UUID.randomUUID().toString().substring(0, 8);
    long last = 0;
    for (String id : List.of("c", "a", "e", "b", "d")) {
      last = troupe.putKey(type, id, "n", id).version().orElseThrow();
    }
    EntityPage first = troupe.listEntities(type, ListQuery.firstPage().limit(2));
    assertEquals(List.of("a", "b"), first.entities().stream().map(ListedEntity::id).toList());
    assertEquals("b", first.next().orElseThrow());
    troupe.delete(type, "c");
    List<String> all = new ArrayList<>();
    troupe.allEntities(type, ListQuery.firstPage().limit(2).withStates())
        .forEach(listed -> all.add(listed.id() + "=" + listed.state().orElseThrow().get("n")
            .asText()));
    assertEquals(List.of("a=a", "b=b", "d=d", "e=e"), all);
    List<String> atVersion = new ArrayList<>();
    troupe.allEntities(type, ListQuery.firstPage().at(last).from("b"))
        .forEach(listed -> atVersion.add(listed.id()));
    assertEquals(List.of("b", "c", "d", "e"), atVersion, "a page at a version is that cut");
  }

  @Test
  void anEntitysVersionsPageNewestFirstAndEachIsReadable() {
    List<Long> written = new ArrayList<>();
    for (int value = 1; value <= 3; value++) {
      written.add(troupe.putKey("Loose", unique, "n", value).version().orElseThrow());
    }
    dev.troupe.client.EntityVersions first = troupe.entityVersions("Loose", unique, null, 2);
    assertEquals("Loose/" + unique, first.entity());
    assertEquals(List.of(written.get(2), written.get(1)), first.versions());
    dev.troupe.client.EntityVersions rest = troupe.async().entityVersions("Loose", unique,
        first.next().orElseThrow(), 2).join();
    assertEquals(List.of(written.get(0)), rest.versions());
    assertTrue(rest.next().isEmpty());
    assertEquals(1, troupe.get("Loose", unique, rest.versions().get(0)).state().get("n").asInt());
    assertEquals(written.reversed(), troupe.entityVersions("Loose", unique).versions());
  }

  @Test
  void staticAndInteractiveTransactionsAndSnapshotReads() {
    troupe.act(ACCOUNT, unique + "-alice", "open", Map.of("initial", 100));
    troupe.act(ACCOUNT, unique + "-bob", "open", Map.of("initial", 0));
    String alice = ACCOUNT + "/" + unique + "-alice";
    String bob = ACCOUNT + "/" + unique + "-bob";
    TransactionResult moved = troupe.transact(List.of(
        Operation.act(alice, "withdraw", Map.of("amount", 30)),
        Operation.act(bob, "deposit", Map.of("amount", 30)),
        Operation.assign("Ledger/" + unique, "last", "alice->bob"),
        Operation.increment(alice, "logins", 2),
        Operation.add(alice, "tags", "payer")), List.of(bob), null);
    assertTrue(moved.txId() > 0 && !moved.replayed());
    assertEquals(30, moved.read(bob).state().get("balance").asInt());
    TroupeClientException.Aborted aborted = assertThrows(TroupeClientException.Aborted.class,
        () -> troupe.transact(List.of(Operation.act(alice, "withdraw", Map.of("amount", 1000)),
            Operation.remove(alice, "tags", "payer")), List.of(), "dynamic"));
    assertEquals("precondition_failed", aborted.reason().orElseThrow());
    troupe.transact(List.of(Operation.deleteKey("Ledger/" + unique, "last"),
        Operation.delete("Ledger/" + unique)));
    assertThrows(TroupeClientException.NotFound.class, () -> troupe.get("Ledger", unique));

    try (InteractiveTransaction tx = troupe.begin()) {
      long balance = tx.read(alice).state().get("balance").asLong();
      assertEquals(35, tx.act(alice, "withdraw", Map.of("amount", balance / 2)).state()
          .get("balance").asInt(), "a step sees the transaction's own writes");
      tx.act(bob, "deposit", Map.of("amount", balance / 2));
      tx.write(Operation.increment(bob, "logins", 1));
      assertThrows(TroupeClientException.class,
          () -> tx.act(alice, "withdraw", Map.of("amount", 1000)), "a failed step");
      assertTrue(tx.commit().txId() > 0);
      assertTrue(tx.result().isPresent());
    }
    try (InteractiveTransaction tx = troupe.begin()) {
      tx.act(alice, "withdraw", Map.of("amount", 1));
      // Not committed: closing aborts.
    }
    SnapshotRead cut = troupe.snapshotRead(List.of(alice, bob));
    assertEquals(35, cut.state(alice).get("balance").asInt());
    assertEquals(65, cut.state(bob).get("balance").asInt());
    assertEquals(cut.state(alice), troupe.get(ACCOUNT, unique + "-alice", cut.timestamp())
        .state());
  }

  @Test
  void dependenciesForwardAndDeregister() {
    troupe.putKey("Product", unique, "price", 10);
    troupe.putKey("Cart", unique, "owner", "ada");
    KeyReference leader = new KeyReference("Product/" + unique, "price");
    KeyReference follower = new KeyReference("Cart/" + unique, "item:price");
    DependencyRegistration registered = troupe.registerDependency("update", leader, follower,
        "replicate");
    assertEquals(follower, registered.dependency().orElseThrow().follower());
    assertEquals("replicate", troupe.getDependency(registered.id()).function().orElseThrow());
    troupe.putKey("Product", unique, "price", 12);
    assertEquals(12, troupe.getKey("Cart", unique, "item:price").asInt(), "forwarded");
    assertEquals(registered.id(), troupe.entityDependencies("Cart", unique).follows().get(0).id());
    assertThrows(TroupeClientException.Conflict.class,
        () -> troupe.registerDependency("update", follower, leader, "replicate"), "a cycle");
    assertTrue(troupe.deregisterDependency(registered.id()) > 0);
    assertThrows(TroupeClientException.NotFound.class,
        () -> troupe.getDependency(registered.id()));
    troupe.transact(List.of(Operation.registerDependency("delete", leader,
        new KeyReference("Cart/" + unique, "owner"), null)));
    String deleteDependency = troupe.entityDependencies("Product", unique).leads().get(0).id();
    troupe.transact(List.of(Operation.deregisterDependency(deleteDependency)));
    assertEquals(List.of(), troupe.entityDependencies("Product", unique).leads());
  }

  /** operationId to the class and method of the blocking client that calls it. */
  private static final Map<String, List<Object>> METHODS = Map.ofEntries(
      Map.entry("getHealth", List.of(TroupeClient.class, "health")),
      Map.entry("listTypes", List.of(TroupeClient.class, "listTypes")),
      Map.entry("getType", List.of(TroupeClient.class, "getType")),
      Map.entry("putType", List.of(TroupeClient.class, "putType")),
      Map.entry("listEntities", List.of(TroupeClient.class, "listEntities")),
      Map.entry("getEntity", List.of(TroupeClient.class, "get")),
      Map.entry("listEntityVersions", List.of(TroupeClient.class, "entityVersions")),
      Map.entry("patchEntity", List.of(TroupeClient.class, "patch")),
      Map.entry("deleteEntity", List.of(TroupeClient.class, "delete")),
      Map.entry("getKey", List.of(TroupeClient.class, "getKey")),
      Map.entry("putKey", List.of(TroupeClient.class, "putKey")),
      Map.entry("deleteKey", List.of(TroupeClient.class, "deleteKey")),
      Map.entry("incrementKey", List.of(TroupeClient.class, "increment")),
      Map.entry("addElement", List.of(TroupeClient.class, "add")),
      Map.entry("removeElement", List.of(TroupeClient.class, "remove")),
      Map.entry("invokeAction", List.of(TroupeClient.class, "act")),
      Map.entry("getEntityDependencies", List.of(TroupeClient.class, "entityDependencies")),
      Map.entry("transact", List.of(TroupeClient.class, "transact")),
      Map.entry("beginTransaction", List.of(TroupeClient.class, "begin")),
      Map.entry("readInTransaction", List.of(InteractiveTransaction.class, "read")),
      Map.entry("writeInTransaction", List.of(InteractiveTransaction.class, "write")),
      Map.entry("actInTransaction", List.of(InteractiveTransaction.class, "act")),
      Map.entry("commitTransaction", List.of(InteractiveTransaction.class, "commit")),
      Map.entry("abortTransaction", List.of(InteractiveTransaction.class, "abort")),
      Map.entry("snapshotRead", List.of(TroupeClient.class, "snapshotRead")),
      Map.entry("registerDependency", List.of(TroupeClient.class, "registerDependency")),
      Map.entry("getDependency", List.of(TroupeClient.class, "getDependency")),
      Map.entry("deregisterDependency", List.of(TroupeClient.class, "deregisterDependency")));

  /** Operations for operators and other servers, not applications (the CLI and peers use them). */
  private static final java.util.Set<String> NOT_FOR_APPLICATIONS = java.util.Set.of(
      "getReadiness", "getLiveness", "getOpenApi", "getMetrics", "getCluster",
      "streamBootstrapImage", "pullReplicationLog", "streamReplicationLog",
      "getReplicationStatus", "listReplicationPeers", "addReplicationPeer",
      "removeReplicationPeer", "listRecentTransactions");

  private static final Map<Class<?>, Class<?>> ASYNC_OF = Map.of(
      TroupeClient.class, dev.troupe.client.AsyncTroupeClient.class,
      InteractiveTransaction.class, AsyncInteractiveTransaction.class);

  /**
   * Every client-facing operation of the OpenAPI document the server serves has a method on both
   * faces, with the same parameters (a route added without the client fails here); and every
   * public method of the blocking face has its asynchronous twin returning a future.
   */
  @Test
  void everyOperationOfTheApiHasAMethodOnBothFaces() throws Exception {
    ServerProcess.Answer document = server.send("GET", "/v1/openapi.json", null);
    assertEquals(200, document.status(), document.text());
    java.util.Set<String> operations = new java.util.TreeSet<>();
    document.body().path("paths").forEach(path -> path.forEach(operation -> {
      if (operation.has("operationId")) {
        operations.add(operation.get("operationId").asText());
      }
    }));
    operations.removeAll(NOT_FOR_APPLICATIONS);
    operations.removeAll(METHODS.keySet());
    assertEquals(java.util.Set.of(), operations, "operations without a client method");
    for (List<Object> method : METHODS.values()) {
      Class<?> owner = (Class<?>) method.get(0);
      assertTrue(Arrays.stream(owner.getMethods())
          .anyMatch(each -> each.getName().equals(method.get(1))), method.toString());
    }
    for (Map.Entry<Class<?>, Class<?>> faces : ASYNC_OF.entrySet()) {
      for (java.lang.reflect.Method blocking : faces.getKey().getDeclaredMethods()) {
        if (!java.lang.reflect.Modifier.isPublic(blocking.getModifiers())
            || java.lang.reflect.Modifier.isStatic(blocking.getModifiers())
            || List.of("close", "async", "baseUri", "allEntities", "result")
                .contains(blocking.getName())) {
          continue;
        }
        java.lang.reflect.Method twin = faces.getValue().getMethod(blocking.getName(),
            blocking.getParameterTypes());
        assertTrue(blocking.getName().equals("causalToken") || blocking.getName().equals("txId")
            || twin.getReturnType() == java.util.concurrent.CompletableFuture.class,
            twin.toString());
      }
    }
  }

  // ---- The asynchronous face ----

  @Test
  void theAsynchronousFaceDoesTheSame() {
    var async = troupe.async();
    Written written = async.patch("Loose", unique, Map.of("a", 1)).join();
    assertEquals(written.version().orElseThrow(), async.get("Loose", unique).join().version());
    CompletionException missing = assertThrows(CompletionException.class,
        () -> async.get("Loose", unique + "-none").join());
    assertInstanceOf(TroupeClientException.NotFound.class, missing.getCause());
    async.act(ACCOUNT, unique, "open", Map.of("initial", 10)).join();
    String entity = ACCOUNT + "/" + unique;
    TransactionResult committed = async.begin()
        .thenCompose(tx -> tx.act(entity, "withdraw", Map.of("amount", 4))
            .thenCompose(seen -> tx.commit()))
        .join();
    assertTrue(committed.txId() > 0);
    AsyncInteractiveTransaction abandoned = async.begin().join();
    abandoned.act(entity, "withdraw", Map.of("amount", 1)).thenCompose(seen -> abandoned.abort())
        .join();
    assertEquals(6, async.getKey(ACCOUNT, unique, "balance").join().asInt());
    assertEquals(6, async.snapshotRead(List.of(entity)).join().state(entity).get("balance")
        .asInt());
    assertEquals(1, async.listEntities("Loose", ListQuery.firstPage().from(unique).limit(1))
        .join().entities().size());
  }

  // ---- Retries with idempotency keys ----

  @Test
  void aLostAnswerIsRetriedWithTheSameKeyAndAppliedOnce() throws Exception {
    troupe.act(ACCOUNT, unique, "open", Map.of("initial", 10));
    Through lossy = through(AnswerLosingProxy.loseFirst(1, request -> request.path()
        .contains("/increment")));
    Written written = lossy.client().increment(ACCOUNT, unique, "logins", 5);
    assertTrue(written.replayed(), "the retry got the first attempt's answer");
    assertEquals(5, troupe.getKey(ACCOUNT, unique, "logins").asInt(), "the increment ran once");
    List<String> keys = lossy.proxy().seen().stream()
        .filter(request -> request.path().contains("/increment"))
        .map(request -> request.header("Idempotency-Key")).toList();
    assertEquals(2, keys.size());
    assertNotNull(keys.get(0));
    assertEquals(keys.get(0), keys.get(1), "one key across attempts");

    // The same through the asynchronous face, for a static transaction and an interactive commit.
    Through async = through(AnswerLosingProxy.loseFirstAttemptOfEachKey(request -> request
        .path().equals("/v1/transactions") || request.path().endsWith("/commit")));
    String entity = ACCOUNT + "/" + unique;
    assertTrue(async.client().async().transact(List.of(Operation.act(entity, "withdraw",
        Map.of("amount", 3)))).join().replayed());
    InteractiveTransaction tx = async.client().begin();
    tx.act(entity, "withdraw", Map.of("amount", 2));
    assertTrue(tx.commit().replayed());
    assertEquals(5, troupe.getKey(ACCOUNT, unique, "balance").asInt(), "each withdrawn once");
  }

  @Test
  void anInteractiveStepIsNotSentTwice() throws Exception {
    troupe.act(ACCOUNT, unique, "open", Map.of("initial", 10));
    Through lossy = through(AnswerLosingProxy.loseFirst(1, request -> request.path()
        .endsWith("/write")));
    long txId;
    try (InteractiveTransaction tx = lossy.client().begin()) {
      txId = tx.txId();
      assertThrows(TroupeClientException.ConnectionFailed.class,
          () -> tx.write(Operation.increment(ACCOUNT + "/" + unique, "logins", 1)));
    }
    assertEquals(1, lossy.proxy().seen().stream()
        .filter(request -> request.path().equals("/v1/transactions/" + txId + "/write")).count());
    assertEquals(0, troupe.getKey(ACCOUNT, unique, "logins").asInt(), "aborted on close");
  }

  @Test
  void retryAfterIsHonouredAndRetriesAreBounded() throws Exception {
    troupe.putKey("Loose", unique, "a", 1);
    Answer moving = new Answer(503, error("not_owner", "moving"), Map.of("Retry-After", "1"));
    Through refusing = through(AnswerLosingProxy.answerFirst(1, moving,
        request -> request.method().equals("GET")));
    long started = System.nanoTime();
    assertEquals(1, refusing.client().get("Loose", unique).state().get("a").asInt());
    assertEquals(2, refusing.proxy().seen().size());
    assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(950),
        "waited Retry-After");

    Answer overloaded = new Answer(429, error("overloaded", "busy"), Map.of("Retry-After", "0"));
    Through busy = through(request -> overloaded, RetryPolicy.DEFAULT.withMaxAttempts(3), null);
    TroupeClientException.Overloaded refused = assertThrows(
        TroupeClientException.Overloaded.class, () -> busy.client().putKey("Loose", unique, "a",
            2));
    assertTrue(refused.retryable());
    assertEquals(Duration.ZERO, refused.retryAfter().orElseThrow());
    assertEquals(3, busy.proxy().seen().size());
    // A Retry-After beyond the time bound gives up at once.
    Answer full = new Answer(503, error("unavailable", "full"), Map.of("Retry-After", "60"));
    Through slow = through(request -> full,
        RetryPolicy.DEFAULT.withMaxTotal(Duration.ofSeconds(5)), null);
    assertThrows(TroupeClientException.Unavailable.class, () -> slow.client().get("Loose",
        unique));
    assertEquals(1, slow.proxy().seen().size());
    // outcome_unknown is retried with a key, never without.
    Answer unknown = new Answer(500, error("outcome_unknown", "?"), Map.of());
    Through keyed = through(AnswerLosingProxy.answerFirst(1, unknown,
        request -> !request.method().equals("GET")));
    assertTrue(keyed.client().putKey("Loose", unique, "a", 3).version().isPresent());
    assertEquals(2, keyed.proxy().seen().size());
    Through unkeyed = through(AnswerLosingProxy.answerFirst(1, unknown,
        request -> !request.method().equals("GET")));
    assertThrows(TroupeClientException.OutcomeUnknown.class, () -> unkeyed.client().begin());
    assertEquals(1, unkeyed.proxy().seen().size());
  }

  @Test
  void noServerIsAConnectionFailure() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    try (TroupeClient nowhere = TroupeClient.builder("http://127.0.0.1:" + port)
        .retry(RetryPolicy.DEFAULT.withMaxAttempts(2)).build()) {
      TroupeClientException.ConnectionFailed failed = assertThrows(
          TroupeClientException.ConnectionFailed.class, () -> nowhere.get("Loose", unique));
      assertEquals(0, failed.status());
      assertInstanceOf(TroupeClientException.ConnectionFailed.class, assertThrows(
          CompletionException.class, () -> nowhere.async().health().join()).getCause());
    }
  }

  // ---- The causal token ----

  @Test
  void theCausalTokenOfANamedDataCentreIsKeptAndSentOn() throws Exception {
    Through watched = through(request -> AnswerLosingProxy.FORWARD);
    TroupeClient client = watched.client();
    assertTrue(client.causalToken().isEmpty());
    long first = client.putKey("Loose", unique, "a", 1).version().orElseThrow();
    String held = client.causalToken().orElseThrow();
    Matcher pair = Pattern.compile("(\\d+):(\\d+)").matcher(held);
    assertTrue(pair.matches(), held);
    assertTrue(Long.parseLong(pair.group(1)) > 0 && Long.parseLong(pair.group(2)) >= first, held);
    assertEquals(null, watched.proxy().seen().get(0).header("Troupe-Causal-Token"),
        "none held before the first answer");
    client.get("Loose", unique);
    assertEquals(held, watched.proxy().seen().get(1).header("Troupe-Causal-Token"), "sent on");
    long later = client.async().putKey("Loose", unique, "a", 2).join().version().orElseThrow();
    String moved = client.causalToken().orElseThrow();
    assertTrue(Long.parseLong(moved.substring(moved.indexOf(':') + 1)) >= later, "it moves on");
    // Another client (another process, another data centre) continues the session from it.
    Through follower = through(request -> AnswerLosingProxy.FORWARD,
        RetryPolicy.DEFAULT, moved);
    assertEquals(2, follower.client().get("Loose", unique).state().get("a").asInt());
    assertEquals(moved, follower.proxy().seen().get(0).header("Troupe-Causal-Token"));
  }

  // ---- The README's example ----

  /**
   * The "From Java" example of README.md, as printed but for the server's address and token and
   * this run's type name, compiled and run by {@code java} from source with only the client's
   * classes and Jackson on the class path.
   */
  @Test
  void theReadmeExampleCompilesAndRuns(@TempDir Path work) throws Exception {
    String readme = Files.readString(Path.of("../README.md"));
    int section = readme.indexOf("## From Java");
    assertTrue(section >= 0, "README has a From Java section");
    Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme);
    assertTrue(block.find(section), "a java block in From Java");
    String type = "Readme" + UUID.randomUUID().toString().substring(0, 8);
    String example = block.group(1)
        .replace("TroupeClient.connect(\"http://127.0.0.1:8080\")",
            "TroupeClient.builder(\"" + server.baseUrl() + "\").token(\"" + token + "\").build()")
        .replace("\"Account\"", "\"" + type + "\"").replace("\"Account/", "\"" + type + "/");
    assertFalse(example.equals(block.group(1)), "the example names the server and Account");
    Files.writeString(work.resolve("Example.java"), example);
    Files.writeString(work.resolve("account.yaml"), ACCOUNT_YAML.formatted(type));
    String classPath = Arrays.stream(System.getProperty("java.class.path")
            .split(File.pathSeparator))
        .filter(entry -> entry.contains("client-java") || entry.contains("troupe-client")
            || entry.contains("jackson-core") || entry.contains("jackson-databind")
            || entry.contains("jackson-annotations"))
        .collect(Collectors.joining(File.pathSeparator));
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process run = new ProcessBuilder(java.toString(), "-cp", classPath, "Example.java")
        .directory(work.toFile()).redirectErrorStream(true).start();
    String printed = new String(run.getInputStream().readAllBytes());
    assertTrue(run.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, run.exitValue(), printed + "\n" + example);
    assertTrue(printed.contains("balance - amount >= 0"), "the refusal's message was printed: "
        + printed);
    assertEquals(0, troupe.get(type, "alice").state().get("balance").asInt(), printed);
    assertEquals(100, troupe.get(type, "bob").state().get("balance").asInt(), printed);
  }

  // ---- The entity contract ----

  /**
   * The entity contract's cases with every request the client can make made through it ({@link
   * ClientContractDriver}); the rest over plain HTTP with the token (the run prints which).
   */
  @Nested
  class EntityContractThroughTheClient extends EntityContract {
    private final TroupeClient client =
        TroupeClient.builder(server.baseUrl()).token(token).retry(RetryPolicy.NONE).build();
    private final ClientContractDriver driver = new ClientContractDriver(client,
        (method, path, body) -> ServerProcess.send(server.baseUrl() + path, method, body,
            "application/json", Map.of("Authorization", "Bearer " + token),
            Duration.ofSeconds(60)));

    @org.junit.jupiter.api.AfterEach
    void report() {
      client.close();
      if (!driver.raw().isEmpty()) {
        System.out.println("over plain HTTP (not expressible with a typed client): "
            + driver.raw());
      }
    }

    @Override
    protected ServerProcess server() {
      return server;
    }

    @Override
    protected ServerProcess.Answer send(String method, String path, String body)
        throws Exception {
      return driver.send(method, path, body);
    }
  }
}
