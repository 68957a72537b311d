package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.txn.request.IdempotencyCore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.Location;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP shell of idempotent retries: reads the {@code Idempotency-Key} header of a write, asks
 * {@link IdempotencyCore} what to do, and runs the write with its record (which the engine writes
 * in the same atomic storage write as the commit), replays a recorded answer, or refuses.
 *
 * <p>Order of a first attempt: the write commits together with its key's record; its answer is
 * sent, and stored in the record right after ({@link IdempotencyAnswerRecorder}: unsynced, it
 * survives a process crash and is durable with the next synced write); the key stays in progress
 * until then. So a retry gets exactly the first answer, unless the node crashed (or lost power)
 * in those milliseconds: the retry then gets an answer rebuilt from the commit's record (see
 * {@link #rebuild}).
 *
 * <p>Concurrency: the core is used under this object's lock; storage calls run outside it.
 *
 * <p>Recovery: at start every stored record is read once ({@link IdempotencyCore#remember}), so
 * the bound on keys and their expiry survive a restart; expired ones are deleted every {@code
 * prune-interval-millis}.
 */
final class IdempotentRequests {
  private static final Logger log = LoggerFactory.getLogger(IdempotentRequests.class);
  static final String HEADER = "Idempotency-Key";
  /** {@link #HEADER} as header names compare. */
  private static final String HEADER_LOWER_CASE = HEADER.toLowerCase(java.util.Locale.ROOT);
  static final String REPLAYED_HEADER = "Idempotent-Replayed";
  /** Exit status of the test-only halt between commit and answer. */
  static final int HALT_STATUS = 99;
  /** The namespace of keys sent without a token (no tokens configured): one shared by all. */
  static final String NO_NAMESPACE = "";

  private final Troupe troupe;
  private final IdempotencySettings settings;
  private final IdempotencyCore core;
  private final IdempotencyAnswerRecorder answerRecorder;
  /** Keys whose first attempt has answered while its answer is being stored: done when stored. */
  private final java.util.concurrent.ConcurrentHashMap<String, CompletableFuture<Void>>
      answersBeingStored = new java.util.concurrent.ConcurrentHashMap<>();
  /** {@link IdempotencyCore#evictedTotal} at the last prune, for its warning. */
  private long evictedAtLastPrune;

  IdempotentRequests(Troupe troupe, IdempotencySettings settings) {
    this.troupe = troupe;
    this.settings = settings;
    this.core = new IdempotencyCore(settings.retentionMillis(), settings.maxKeys());
    this.answerRecorder = new IdempotencyAnswerRecorder(troupe, settings.maxAnswersPerWrite());
    long now = System.currentTimeMillis();
    List<CompletableFuture<Void>> deletions = new java.util.ArrayList<>();
    List<IdempotencyRecord> stored = new java.util.ArrayList<>(troupe.idempotencyRecords());
    stored.sort(java.util.Comparator.comparingLong(IdempotencyRecord::recordedAtMillis));
    for (IdempotencyRecord record : stored) {
      if (core.expired(record.recordedAtMillis(), now)) {
        deletions.add(troupe.forgetIdempotencyRecord(record.qualifiedKey()));
      } else {
        core.remember(record.qualifiedKey(), record.recordedAtMillis());
      }
    }
    // Done before the first request: a new attempt's record must never meet an older deletion.
    CompletableFuture.allOf(deletions.toArray(CompletableFuture[]::new))
        .exceptionally(failure -> null).join();
    Duration interval = Duration.ofMillis(settings.pruneIntervalMillis());
    troupe.actorSystem().scheduler().scheduleWithFixedDelay(interval, interval, this::prune,
        troupe.actorSystem().executionContext());
  }

  private void prune() {
    List<String> expired;
    long evictedSincePrune;
    long oldestMillis;
    synchronized (this) {
      expired = core.pruneExpired(System.currentTimeMillis());
      evictedSincePrune = core.evictedTotal() - evictedAtLastPrune;
      evictedAtLastPrune = core.evictedTotal();
      oldestMillis = core.oldestRecordedAtMillis();
    }
    if (evictedSincePrune > 0) {
      log.warn("{} idempotency keys were forgotten before troupe.idempotency.retention-millis"
          + " ({} ms) to stay within max-keys ({}): keys are now kept for about {} ms; raise"
          + " max-keys if clients retry later than that", evictedSincePrune,
          settings.retentionMillis(), settings.maxKeys(),
          oldestMillis < 0 ? 0 : System.currentTimeMillis() - oldestMillis);
    }
    forget(expired, "an expired");
  }

  /** Deletes the records of keys the core forgot (expired or evicted), then tells it so. */
  private void forget(List<String> qualifiedKeys, String what) {
    for (String qualifiedKey : qualifiedKeys) {
      CompletableFuture<Void> deleted;
      try {
        deleted = troupe.forgetIdempotencyRecord(qualifiedKey);
      } catch (RuntimeException e) {
        deleted = CompletableFuture.failedFuture(e);
      }
      deleted.whenComplete((ignored, failure) -> {
        if (failure != null) {
          log.warn("deleting {} idempotency key failed (it expires again at the next start): {}",
              what, failure.toString());
        }
        synchronized (this) {
          core.forgotten(qualifiedKey);
        }
      });
    }
  }

  /**
   * Answers {@code request} through {@code route}, idempotently when it is a write carrying the
   * header (any other request, or one without the header, goes straight to {@code route}). Keys
   * live in {@code namespace}, the name of the request's token ({@link #NO_NAMESPACE} without one), so
   * two clients with different tokens never see each other's answers.
   */
  CompletionStage<HttpResponse> answer(HttpRequest request, List<String> path, String namespace,
      Function<HttpRequest, CompletionStage<HttpResponse>> route, RequestSupport support) {
    Optional<String> header = RequestSupport.headerValue(request, HEADER_LOWER_CASE);
    if (header.isEmpty() || !isKeyedWrite(request.method().name(), path)) {
      return route.apply(request);
    }
    String invalid = IdempotencyCore.invalidKey(header.get());
    if (invalid != null) {
      throw TroupeException.invalid(invalid);
    }
    String qualifiedKey = IdempotencyCore.qualifiedKey(namespace, header.get());
    CompletableFuture<Void> answerBeingStored = answersBeingStored.get(qualifiedKey);
    if (answerBeingStored != null) {
      // The first attempt has answered and its answer is on its way into the record: wait for
      // it, then decide (a replay) instead of refusing a retry that raced the first answer.
      return answerBeingStored.handle((ignored, failure) -> null)
          .thenCompose(ignored -> answer(request, path, namespace, route, support));
    }
    return support.body(request).thenCompose(body -> {
      byte[] fingerprint = fingerprint(request, body);
      HttpRequest strict = request.withEntity(request.entity().getContentType(), body);
      // Asked before the record is read: a write that commits in between is then seen as stored.
      boolean stillRunning = troupe.idempotentWriteRunning(qualifiedKey);
      Optional<IdempotencyRecord> stored = troupe.idempotencyRecord(qualifiedKey);
      long now = System.currentTimeMillis();
      IdempotencyCore.Decision decision;
      List<String> evicted;
      synchronized (this) {
        decision = core.decide(qualifiedKey, fingerprint, stored.map(record ->
            new IdempotencyCore.Stored(record.fingerprint(), record.recordedAtMillis(),
                record.hasAnswer())).orElse(null), stillRunning, now);
        evicted = core.takeEvicted();
      }
      forget(evicted, "an evicted");
      return switch (decision) {
        case IdempotencyCore.Decision.Run run ->
            run(strict, path, route, qualifiedKey, fingerprint, now);
        case IdempotencyCore.Decision.Replay replay ->
            CompletableFuture.completedFuture(replayed(stored.get(), path));
        case IdempotencyCore.Decision.Rebuild rebuild -> rebuild(stored.get(), strict, path);
        case IdempotencyCore.Decision.Reused reused ->
            CompletableFuture.failedFuture(new TroupeException(ErrorCode.IDEMPOTENCY_KEY_REUSED,
                "Idempotency-Key '" + header.get() + "' was used for a different request"
                    + " (method, path or body)"));
        case IdempotencyCore.Decision.InProgress inProgress ->
            CompletableFuture.failedFuture(new TroupeException(ErrorCode.CONFLICT,
                "the first request with Idempotency-Key '" + header.get()
                    + "' is still in progress; retry later"));
        case IdempotencyCore.Decision.Full full ->
            CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
                settings.maxKeys() + " writes with idempotency keys are in progress"
                    + " (troupe.idempotency.max-keys); retry later"));
      };
    });
  }

  /** The writes that take the header (docs/ARCHITECTURE.md, "Idempotent retries"). */
  static boolean isKeyedWrite(String method, List<String> path) {
    int size = path.size();
    if (size < 2 || !path.get(0).equals("v1")) {
      return false;
    }
    return switch (path.get(1)) {
      case "entities" -> size >= 4 && List.of("PUT", "PATCH", "DELETE", "POST").contains(method);
      case "transactions" -> method.equals("POST")
          && (size == 2 || (size == 4 && path.get(3).equals("commit")));
      case "dependencies" -> (method.equals("POST") && size == 2)
          || (method.equals("DELETE") && size == 3);
      default -> false;
    };
  }

  private CompletionStage<HttpResponse> run(HttpRequest request, List<String> path,
      Function<HttpRequest, CompletionStage<HttpResponse>> route, String qualifiedKey,
      byte[] fingerprint, long now) {
    IdempotencyRecord pending = IdempotencyRecord.pending(qualifiedKey, fingerprint, now);
    @SuppressWarnings("unchecked")
    CompletionStage<HttpResponse>[] response = new CompletionStage[1];
    boolean claimed;
    try {
      claimed = troupe.idempotently(pending, () -> response[0] = route.apply(request));
    } catch (RuntimeException refused) {
      finish(qualifiedKey, false, now);
      throw refused;
    }
    if (!claimed) {
      // Refused before reaching the engine: nothing changed, nothing is remembered.
      return response[0].whenComplete((answer, failure) -> finish(qualifiedKey, false, now));
    }
    return response[0].handle((answer, failure) -> {
      if (failure != null || answer.status().intValue() >= 300) {
        // Refused (nothing committed, no record: a retry runs again), or outcome unknown (the
        // record exists exactly when it committed: a retry then rebuilds the answer).
        finish(qualifiedKey, ownRecord(qualifiedKey, pending).isPresent(), now);
        return failure != null ? CompletableFuture.<HttpResponse>failedFuture(unwrap(failure))
            : CompletableFuture.completedFuture(answer);
      }
      if (settings.haltAfterCommitForTests()) {
        log.error("troupe.idempotency.testing.halt-after-commit: halting after the commit");
        Runtime.getRuntime().halt(HALT_STATUS);
      }
      byte[] body = strictBytes(answer);
      if (body == null || body.length > settings.maxAnswerBytes()) {
        // Too large to store: a replay rebuilds it (or, when nothing committed, runs again).
        finish(qualifiedKey, ownRecord(qualifiedKey, pending).isPresent(), now);
        return CompletableFuture.completedFuture(answer);
      }
      // Sent at once; the answer follows into the record (IdempotencyAnswerRecorder), and the key
      // stays in progress until it is there, so a retry meanwhile waits (409) rather than
      // rebuilding. A write that changed nothing committed no record: its answer is remembered
      // all the same. A crash before the answer is written leaves the commit's record, from which
      // a retry rebuilds the answer.
      CompletableFuture<Void> stored = new CompletableFuture<>();
      answersBeingStored.put(qualifiedKey, stored);
      answerRecorder.record(pending.withAnswer(answer.status().intValue(), body))
          .whenComplete((ignored, recordFailure) -> {
            if (recordFailure != null) {
              log.warn("could not store the answer of an idempotent write (a replay rebuilds it):"
                  + " {}", recordFailure.toString());
            }
            finish(qualifiedKey, true, now);
            answersBeingStored.remove(qualifiedKey, stored);
            stored.complete(null);
          });
      return CompletableFuture.completedFuture(answer);
    }).thenCompose(next -> next);
  }

  /** The stored record of this key written by this attempt's commit, if it committed. */
  private Optional<IdempotencyRecord> ownRecord(String qualifiedKey, IdempotencyRecord pending) {
    try {
      return troupe.idempotencyRecord(qualifiedKey).filter(record ->
          record.recordedAtMillis() == pending.recordedAtMillis()
              && java.util.Arrays.equals(record.fingerprint(), pending.fingerprint()));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private synchronized void finish(String qualifiedKey, boolean recorded, long recordedAtMillis) {
    core.finish(qualifiedKey, recorded, recordedAtMillis);
  }

  private static Throwable unwrap(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }

  private static byte[] strictBytes(HttpResponse response) {
    return response.entity() instanceof HttpEntity.Strict strict
        ? strict.getData().toArray() : null;
  }

  private static HttpResponse replayed(IdempotencyRecord record, List<String> path) {
    return marked(RequestSupport.json(record.answerStatus(), record.answerBody()), path,
        record.answerBody());
  }

  /** The replay marker, and the {@code Location} a dependency's registration answers with. */
  private static HttpResponse marked(HttpResponse response, List<String> path, byte[] body) {
    HttpResponse replay = response.addHeader(RawHeader.create(REPLAYED_HEADER, "true"));
    if (path.size() == 2 && path.get(1).equals("dependencies")
        && response.status().intValue() == 201) {
      JsonNode id = Json.parse(body).path("id");
      if (id.isTextual()) {
        replay = replay.addHeader(Location.create("/v1/dependencies/" + id.asText()));
      }
    }
    return replay;
  }

  /**
   * The answer of a write that committed but whose answer was never stored (the node crashed
   * between the commit and the answer, so no client saw one). A single turn's is exact: its
   * version is the recorded commit timestamp and its state the entity's state at that version
   * (only the version once history retention has dropped that state). A transaction's (and a
   * turn that ran as one) says which transaction committed: {@code {"txId", "committed": true}}
   * ({@code 201} with the dependency's {@code id} and {@code Location} for a registration),
   * because its entities' versions are not in the record (the document's {@code RebuiltAnswer}). Stored for the next retry.
   */
  private CompletionStage<HttpResponse> rebuild(IdempotencyRecord record, HttpRequest request,
      List<String> path) {
    CompletableFuture<ObjectNode> body;
    int status = 200;
    if (record.entity() != null) {
      long version = record.commitTimestamp();
      boolean withState = !(request.method().name().equals("DELETE")
          || (request.method().name().equals("PUT") && path.size() == 6));
      if (!withState) {
        body = CompletableFuture.completedFuture(versionBody(version));
      } else {
        EntityId entity = record.entity();
        body = troupe.readAt(entity, version).handle((view, failure) -> {
          ObjectNode node = versionBody(version);
          if (failure == null) {
            node.set("state", view.state());
          }
          return node;
        });
      }
    } else {
      ObjectNode node = Json.NODES.objectNode();
      node.put("txId", record.transactionId());
      node.put("committed", true);
      if (path.size() == 2 && path.get(1).equals("dependencies")) {
        // The registered dependency's id follows from the request (it names both ends), so the
        // rebuilt answer carries it, and its Location, as the first one did.
        status = 201;
        if (request.entity() instanceof HttpEntity.Strict strict) {
          node.put("id", Dependency.fromJson(Json.parse(strict.getData().toArray())).id());
        }
      }
      body = CompletableFuture.completedFuture(node);
    }
    int answerStatus = status;
    return body.thenCompose(node -> {
      byte[] bytes = Json.writeBytes(node);
      return answerRecorder.record(record.withAnswer(answerStatus, bytes))
          .handle((ignored, failure) -> marked(RequestSupport.json(answerStatus, bytes), path,
              bytes));
    });
  }

  private static ObjectNode versionBody(long version) {
    ObjectNode node = Json.NODES.objectNode();
    node.put("version", version);
    return node;
  }

  /** SHA-256 of the method, the path with its query, and the body. */
  static byte[] fingerprint(HttpRequest request, byte[] body) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      digest.update(request.method().name().getBytes(StandardCharsets.UTF_8));
      digest.update((byte) '\n');
      digest.update(request.getUri().path().getBytes(StandardCharsets.UTF_8));
      digest.update((byte) '?');
      digest.update(request.getUri().rawQueryString().orElse("").getBytes(StandardCharsets.UTF_8));
      digest.update((byte) '\n');
      digest.update(body);
      return digest.digest();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JVM has no SHA-256", e);
    }
  }
}
