package dev.troupe.server.replication;

import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.runtime.replication.ReplicationShell;
import dev.troupe.replication.PullRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pulls one peer's replication log into this DC, in rounds: the shell says what to pull from the
 * peer now ({@link ReplicationShell#pullsFrom}: the peer's own entries after what this DC received
 * of them, and other origins' while forwarding), each pull is one {@code GET /v1/replication/log}
 * on the peer's REST server (Pekko HTTP's pooled client), each answer's batch is decoded and handed
 * to {@link ReplicationShell#received}, and the next pull waits until that batch is durable. A
 * round that brought entries is followed by the next at once; a round that brought none (the peer
 * is idle: its answers are heartbeats that still advance its received entry) waits {@code
 * pull-interval-millis} (with long polls: what is left of it since the round started). With long
 * polls ({@code
 * long-poll-max-millis}) the pull of the peer's own entries asks the peer to hold an empty answer
 * until its next commit or that bound: the peer has then done the waiting, a commit travels as
 * soon as it is in the peer's log, and the next round follows at once.
 *
 * <p><b>Replication streams</b> ({@code stream}, on by default): the peer's own entries are not
 * pulled in rounds but taken from one long answer, {@code GET /v1/replication/stream}, in which
 * the peer pushes each commit as soon as it is in its log (docs/ARCHITECTURE.md, "Replication
 * streams"). Under load a long poll always returns with entries, and a commit that comes just
 * after the peer answered waits for that answer to travel, the next request to travel and its
 * answer: a round trip more than half of one. A stream has no such gap. The stream's bytes are cut
 * into frames ({@link FrameSplitter}), each decoded and handed to the shell in order, the next only
 * once the previous is durable (batches that arrived meanwhile joined into one, up to {@code
 * pull-batch-max-entries} entries) (so Pekko's backpressure holds the peer while this DC writes);
 * it starts from the received entry the shell plans ({@link ReplicationShell#pullsFrom}) and is
 * reopened at once when the peer ends it ({@code stream-max-millis}). Other origins forwarded
 * through the peer are still pulled in rounds, without long polls.
 *
 * <p>Failures: an unreachable or partitioned peer, a timeout ({@code pull-timeout-millis}), an
 * answer other than 200 (a refusal, an overloaded peer) and bytes that do not decode all end the
 * round (or the stream: also a stream silent for {@code pull-timeout-millis}, a frame that does
 * not decode, an answer cut inside a frame) the same way: counted, reported to the shell ({@link
 * ReplicationShell#linkFailed}, which may then pull that peer's entries from another peer), and
 * followed by a wait that starts at {@code pull-backoff-initial-millis} and doubles per
 * consecutive failure up to {@code pull-backoff-max-millis}. Nothing a failed pull brought is kept
 * but what was already durable, and pulls restart from the received vector, so a failure loses
 * nothing and duplicates are harmless.
 *
 * <p>Concurrency: at most one round and one stream in flight per peer; their steps run on Pekko's
 * threads (the HTTP client's completions, the store's) and the scheduler's. {@link #close} stops
 * scheduling and ends the stream; a round in flight ends by itself.
 */
public final class ReplicationPuller implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ReplicationPuller.class);
  /** How much of a refusal's body a failure's description quotes. */
  private static final int QUOTED_BODY_CHARACTERS = 300;

  private final ActorSystem<?> system;
  private final Http http;
  private final Materializer materializer;
  private final ReplicationShell shell;
  private final ReplicationServerSettings.Peer peer;
  private final ReplicationServerSettings settings;
  private final int maxEntries;
  private final List<HttpHeader> fixedHeaders;
  private final PullStatistics statistics = new PullStatistics();
  private volatile boolean closed;
  private volatile Cancellable next;
  /** Origins whose truncated answer was logged at WARN already (once each, not per round). */
  private final java.util.Set<Integer> truncatedWarned =
      java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile Cancellable nextStream;
  /** Ends the stream in flight, if any ({@link #close}). */
  private volatile UniqueKillSwitch streamSwitch;

  ReplicationPuller(ActorSystem<?> system, ReplicationShell shell,
      ReplicationServerSettings.Peer peer, ReplicationServerSettings settings, int maxEntries) {
    this.system = system;
    this.http = Http.get(system);
    this.materializer = Materializer.matFromSystem(system);
    this.shell = shell;
    this.peer = peer;
    this.settings = settings;
    this.maxEntries = maxEntries;
    List<HttpHeader> headers = new ArrayList<>();
    headers.add(RawHeader.create(ReplicationProtocol.DC_HEADER, settings.dataCentreName()));
    settings.secret().ifPresent(secret ->
        headers.add(RawHeader.create("Authorization", "Bearer " + secret)));
    this.fixedHeaders = List.copyOf(headers);
  }

  /** Starts pulling (and streaming, with {@code stream}) at once. */
  void start() {
    system.executionContext().execute(this::round);
    if (settings.stream()) {
      system.executionContext().execute(this::openStream);
    }
  }

  public ReplicationServerSettings.Peer peer() {
    return peer;
  }

  public PullStatistics.Snapshot statistics() {
    return statistics.snapshot();
  }

  @Override
  public void close() {
    closed = true;
    for (Cancellable scheduled : new Cancellable[] {next, nextStream}) {
      if (scheduled != null) {
        scheduled.cancel();
      }
    }
    UniqueKillSwitch running = streamSwitch;
    if (running != null) {
      running.shutdown();
    }
  }

  private void round() {
    if (closed) {
      return;
    }
    List<PullRequest> pulls;
    try {
      pulls = shell.pullsFrom(peer.id(), System.currentTimeMillis());
    } catch (RuntimeException e) {
      // The shell closed under us (shutting down).
      log.debug("replication: no pulls from {}: {}", peer.name(), e.toString());
      return;
    }
    if (settings.stream()) {
      // The peer's own entries come by the stream; a round pulls only forwarded origins, and a
      // round with none is no pull (it says nothing about the link).
      pulls = pulls.stream().filter(pull -> pull.originDc() != peer.id()).toList();
      if (pulls.isEmpty()) {
        schedule(settings.pullIntervalMillis());
        return;
      }
    }
    long startedMillis = System.currentTimeMillis();
    pullEach(pulls, 0, false).whenComplete((brought, failure) -> {
      if (failure == null) {
        long nowMillis = System.currentTimeMillis();
        statistics.succeeded(nowMillis);
        long idleMillis = settings.longPollMaxMillis() > 0
            ? Math.max(0, settings.pullIntervalMillis() - (nowMillis - startedMillis))
            : settings.pullIntervalMillis();
        schedule(brought ? 0 : idleMillis);
        return;
      }
      schedule(failed(failure));
    });
  }

  /** Counts, logs and reports a failed pull or stream; the wait before the next attempt. */
  private long failed(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    String why = describe(cause);
    long consecutive = statistics.failed(why);
    if (cause instanceof PullFailed failed && failed.truncatedOrigin != null) {
      // A gap, not an outage: the core takes the origin from another peer; said once.
      if (truncatedWarned.add(failed.truncatedOrigin)) {
        log.warn("replication: {} ({}) no longer holds what this DC needs: {}", peer.name(),
            peer.url(), why);
      }
    } else if (consecutive == 1) {
      log.warn("replication: pulling from {} ({}) failed: {}; retrying with backoff",
          peer.name(), peer.url(), why);
    } else {
      log.debug("replication: pulling from {} failed again ({} in a row): {}", peer.name(),
          consecutive, why);
    }
    if (!closed) {
      shell.linkFailed(peer.id());
    }
    return backoffMillis(consecutive);
  }

  // ---------------------------------------------------------------- the replication stream

  /** Opens the stream of the peer's own entries from where the shell says this DC stands. */
  private void openStream() {
    if (closed) {
      return;
    }
    Optional<PullRequest> own;
    try {
      own = shell.pullsFrom(peer.id(), System.currentTimeMillis()).stream()
          .filter(pull -> pull.originDc() == peer.id()).findFirst();
    } catch (RuntimeException e) {
      // The shell closed under us (shutting down).
      log.debug("replication: no stream from {}: {}", peer.name(), e.toString());
      return;
    }
    if (own.isEmpty()) {
      scheduleStream(settings.pullIntervalMillis());
      return;
    }
    stream(own.get()).whenComplete((ended, failure) ->
        scheduleStream(failure == null ? 0 : failed(failure)));
  }

  /**
   * One stream, from request to its end: completes normally when the peer ended it (or {@link
   * #close}), exceptionally on any failure; everything it handed over before is durable here.
   */
  private CompletableFuture<Void> stream(PullRequest pull) {
    String uri = peer.url() + ReplicationProtocol.STREAM_PATH + "?origin=" + pull.originDc()
        + "&after=" + pull.afterTimestamp();
    HttpRequest request = HttpRequest.GET(uri).addHeaders(fixedHeaders)
        .addHeader(RawHeader.create(ReplicationProtocol.RECEIVED_VECTOR_HEADER,
            VectorText.encode(shell.receivedVector())));
    return http.singleRequest(request).toCompletableFuture()
        .orTimeout(settings.pullTimeoutMillis(), TimeUnit.MILLISECONDS)
        .thenCompose(response -> {
          if (response.status().intValue() != 200) {
            return response.entity().withSizeLimit(settings.pullMaxAnswerBytes())
                .toStrict(settings.pullTimeoutMillis(), materializer)
                .<Void>thenApply(strict -> {
                  throw refusal(pull, response, strict.getData().toArray());
                }).toCompletableFuture();
          }
          return consume(pull, response);
        });
  }

  /** Runs a stream's answer: frames, batches, each durable before the next is taken. */
  private CompletableFuture<Void> consume(PullRequest pull, HttpResponse response) {
    FrameSplitter splitter = new FrameSplitter(settings.pullMaxAnswerBytes());
    Pair<UniqueKillSwitch, java.util.concurrent.CompletionStage<Done>> running =
        response.entity().withoutSizeLimit().getDataBytes()
            .idleTimeout(Duration.ofMillis(settings.pullTimeoutMillis()))
            .viaMat(KillSwitches.single(), Keep.right())
            .mapConcat(chunk -> splitter.offer(chunk.toArray()))
            .map(frame -> batchOf(pull, ReplicationCodec.decodeBatch(frame)))
            // Batches that arrive while the previous one is being made durable are joined (up to
            // a batch's worth of entries): one synced write for them all, not one each.
            .batchWeighted(maxEntries, batch -> (long) Math.max(1, batch.entries().size()),
                Joined::new, Joined::add)
            .map(Joined::batch)
            .mapAsync(1, batch -> {
              statistics.pulled(batch.entries().size());
              return shell.received(peer.id(), batch).thenApply(durable -> batch);
            })
            .toMat(Sink.foreach(batch -> statistics.succeeded(System.currentTimeMillis())),
                Keep.both())
            .run(materializer);
    streamSwitch = running.first();
    if (closed) {
      running.first().shutdown();
    }
    // An answer that ends inside a frame was cut (the peer's server broke off mid-batch).
    return running.second().toCompletableFuture().thenRun(splitter::finish);
  }

  /**
   * Consecutive batches of one stream joined into one: each starts where the previous one's bound
   * ends, so their entries in order and the last bound make one batch that keeps the contract.
   */
  private static final class Joined {
    private final int originDc;
    private final List<dev.troupe.model.causal.ReplicationEntry> entries;
    private long upToTimestamp;

    Joined(ReplicationBatch first) {
      originDc = first.originDc();
      entries = new ArrayList<>(first.entries());
      upToTimestamp = first.upToTimestamp();
    }

    Joined add(ReplicationBatch next) {
      entries.addAll(next.entries());
      upToTimestamp = Math.max(upToTimestamp, next.upToTimestamp());
      return this;
    }

    ReplicationBatch batch() {
      return new ReplicationBatch(originDc, entries, upToTimestamp);
    }
  }

  private void scheduleStream(long delayMillis) {
    if (closed) {
      return;
    }
    if (delayMillis == 0) {
      system.executionContext().execute(this::openStream);
      return;
    }
    nextStream = system.scheduler().scheduleOnce(Duration.ofMillis(delayMillis),
        this::openStream, system.executionContext());
  }

  /** Pulls {@code pulls[index..]} one after another; whether any brought entries. */
  private CompletableFuture<Boolean> pullEach(List<PullRequest> pulls, int index,
      boolean brought) {
    if (index == pulls.size() || closed) {
      return CompletableFuture.completedFuture(brought);
    }
    return pull(pulls.get(index)).thenCompose(entries ->
        pullEach(pulls, index + 1, brought || entries > 0));
  }

  /** One pull: request, decode, hand over; completes once the batch is durable here. */
  private CompletableFuture<Integer> pull(PullRequest pull) {
    // Only the peer's own entries are long-polled: its log grows by its commits, and a round
    // that also forwards other origins must not hold once per origin.
    long waitMillis = pull.originDc() == peer.id() ? settings.longPollMaxMillis() : 0;
    String uri = peer.url() + ReplicationProtocol.LOG_PATH + "?origin=" + pull.originDc()
        + "&after=" + pull.afterTimestamp() + "&limit=" + maxEntries
        + (waitMillis > 0 ? "&wait=" + waitMillis : "");
    HttpRequest request = HttpRequest.GET(uri).addHeaders(fixedHeaders)
        .addHeader(RawHeader.create(ReplicationProtocol.RECEIVED_VECTOR_HEADER,
            VectorText.encode(shell.receivedVector())));
    return http.singleRequest(request).toCompletableFuture()
        .thenCompose(response -> response.entity()
            .withSizeLimit(settings.pullMaxAnswerBytes())
            .toStrict(settings.pullTimeoutMillis(), materializer)
            .thenApply(strict -> answer(pull, response, strict.getData().toArray())))
        .orTimeout(settings.pullTimeoutMillis(), TimeUnit.MILLISECONDS)
        .thenCompose(batch -> {
          statistics.pulled(batch.entries().size());
          return shell.received(peer.id(), batch).thenApply(durable -> batch.entries().size());
        });
  }

  /** The batch a 200 answer carries, for the origin asked for; anything else is a failure. */
  private ReplicationBatch answer(PullRequest pull, HttpResponse response, byte[] body) {
    if (response.status().intValue() != 200) {
      throw refusal(pull, response, body);
    }
    return batchOf(pull, ReplicationCodec.decodeBatch(body));
  }

  /**
   * A failure quoting the start of a refusal's body; a {@code 410 truncated} names the origin (the
   * peer's log lost entries of it after what this DC holds).
   */
  private static PullFailed refusal(PullRequest pull, HttpResponse response, byte[] body) {
    int status = response.status().intValue();
    String text = new String(body, 0, Math.min(body.length, QUOTED_BODY_CHARACTERS),
        StandardCharsets.UTF_8);
    if (status == 410) {
      return new PullFailed("truncated: origin " + pull.originDc() + " after "
          + pull.afterTimestamp() + ": HTTP 410 " + text, pull.originDc());
    }
    return new PullFailed("HTTP " + status + " " + text);
  }

  /** {@code batch} if it is of the origin asked for; a failure otherwise. */
  private static ReplicationBatch batchOf(PullRequest pull, ReplicationBatch batch) {
    if (batch.originDc() != pull.originDc()) {
      throw new PullFailed("asked for origin " + pull.originDc() + ", got a batch of "
          + batch.originDc());
    }
    return batch;
  }

  private void schedule(long delayMillis) {
    if (closed) {
      return;
    }
    if (delayMillis == 0) {
      system.executionContext().execute(this::round);
      return;
    }
    next = system.scheduler().scheduleOnce(Duration.ofMillis(delayMillis), this::round,
        system.executionContext());
  }

  private long backoffMillis(long consecutiveFailures) {
    return backoffMillis(consecutiveFailures, settings.pullBackoffInitialMillis(),
        settings.pullBackoffMaxMillis());
  }

  /**
   * The wait after {@code consecutiveFailures} failed pulls (at least 1): {@code initial * 2^(n-1)},
   * at most {@code max}.
   */
  static long backoffMillis(long consecutiveFailures, long initialMillis, long maxMillis) {
    long wait = initialMillis;
    for (long i = 1; i < consecutiveFailures && wait < maxMillis; i++) {
      wait *= 2;
    }
    return Math.min(wait, maxMillis);
  }

  private String describe(Throwable cause) {
    if (cause instanceof TimeoutException) {
      return "no answer within " + settings.pullTimeoutMillis()
          + " ms (troupe.replication.pull-timeout-millis)";
    }
    if (cause instanceof PullFailed failed) {
      return failed.getMessage();
    }
    if (cause instanceof FrameSplitter.BadStream bad) {
      return bad.getMessage();
    }
    return cause.getClass().getSimpleName() + ": " + cause.getMessage();
  }

  /** A pull answered with something other than the batch asked for. */
  private static final class PullFailed extends RuntimeException {
    /** The origin a {@code 410 truncated} answer was about; null for any other failure. */
    final Integer truncatedOrigin;

    PullFailed(String message) {
      this(message, null);
    }

    PullFailed(String message, Integer truncatedOrigin) {
      super(message, null, false, false);
      this.truncatedOrigin = truncatedOrigin;
    }
  }
}
