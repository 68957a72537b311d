package dev.troupe.server.http;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;

/**
 * Request admission (load shedding): before any work starts, the REST server decides whether it
 * takes a request on or refuses it at once with {@code 429 overloaded} and a {@code Retry-After}
 * header. Not to be confused with PSAC admission, which orders transaction parts inside an entity.
 *
 * <p>Why: past its capacity a server that accepts everything only queues, so every request gets
 * slower (issue 14: with one fixed limit of 4,096 requests, nothing was refused while latency
 * tails reached 2 to 7 s, and health probes timed out). A refusal costs microseconds and tells the
 * client when to come back, and the requests that are admitted keep a bounded latency.
 *
 * <p>How: every request belongs to a {@link WorkClass}, a pure function of its method and path
 * ({@link #classify}). Each limited class has its own adaptive concurrency limit (Netflix
 * concurrency-limits' {@link Gradient2Limit}: the limit grows while the latency of admitted work
 * stays within {@code latency-tolerance} of its long-term average, and shrinks when it rises above,
 * i.e. when work starts to queue). Separate classes so that a flood of one kind of work (slow
 * transactions) cannot take the places of another (cheap reads). Above the classes, {@code
 * max-in-flight-requests} stays an absolute cap on admitted requests. With {@code adaptive = false}
 * only that cap applies: the fixed limit of before, kept as the benchmark's baseline. Health and
 * {@code /metrics} ({@link WorkClass#EXEMPT}) are never counted or refused, so an overloaded server
 * still answers its probes.
 *
 * <p>Invariants: every admitted request holds one {@link Permit}, released exactly once when its
 * answer is ready (a second release is a bug: {@link Invariants#check}); the requests admitted
 * and not yet released never exceed {@code max-in-flight-requests}, whatever the class limits say.
 * The limiter learns from each release: a success samples the latency from admission to answer, a
 * server-side failure or overload ({@code 429}, {@code 5xx}) is a drop (the limit backs off), a
 * client error is ignored (its latency says nothing about load).
 *
 * <p>Concurrency: {@link #admit} and {@link Permit#release} run on any Pekko HTTP or engine thread
 * at once. Counters are atomic; each class limiter is a semaphore whose permits follow the limit,
 * and its limit algorithm synchronizes its own updates. The cap is an increment-then-check on one
 * atomic counter, undone when refused, so it can never be exceeded, only briefly look full.
 */
final class RequestAdmission {
  /** The kind of work a request asks for; each limited class has its own limit. */
  enum WorkClass {
    /** Health and metrics: never counted against a limit. */
    EXEMPT,
    /** Reads of entities, keys, types and dependencies, and snapshot reads. */
    READS,
    /** Changes to one entity (keys, actions, increment/add/remove, delete), type definitions. */
    WRITES,
    /** Multi-entity transactions, interactive steps, dependency (de)registration. */
    TRANSACTIONS;

    /** The classes that have limits, in the order metrics list them. */
    static final List<WorkClass> LIMITED = List.of(READS, WRITES, TRANSACTIONS);

    /** The class's name in metrics labels and settings: {@code reads}, {@code writes}... */
    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** What a release tells the limit about the request's latency. */
  enum Outcome {
    /** Served: its latency is a sample of the server's. */
    SUCCESS,
    /** The server failed or was overloaded further in: the limit backs off. */
    DROPPED,
    /** The client's mistake: its latency says nothing about load. */
    IGNORED;

    /** The outcome an answer with {@code status} stands for. */
    static Outcome ofStatus(int status) {
      if (status == 429 || status >= 500) {
        return DROPPED;
      }
      return status >= 400 ? IGNORED : SUCCESS;
    }
  }

  private final HttpSettings.RequestAdmissionSettings settings;
  private final int maxInFlightRequests;
  /** Requests admitted and not yet released, all classes: never above the cap. */
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Map<WorkClass, ClassState> classes = new EnumMap<>(WorkClass.class);

  /** One limited class: its limiter (null when not adaptive) and its counters. */
  private record ClassState(SimpleLimiter<Void> limiter, AtomicInteger inFlight,
      LongAdder refused) {}

  RequestAdmission(HttpSettings settings) {
    this.settings = settings.requestAdmission();
    this.maxInFlightRequests = settings.maxInFlightRequests();
    for (WorkClass workClass : WorkClass.LIMITED) {
      SimpleLimiter<Void> limiter = this.settings.adaptive()
          ? limiter(workClass, limits(workClass), this.settings.latencyTolerance())
          : null;
      classes.put(workClass, new ClassState(limiter, new AtomicInteger(), new LongAdder()));
    }
  }

  private HttpSettings.ClassLimits limits(WorkClass workClass) {
    return switch (workClass) {
      case READS -> settings.reads();
      case WRITES -> settings.writes();
      case TRANSACTIONS -> settings.transactions();
      case EXEMPT -> throw new IllegalArgumentException("exempt requests have no limits");
    };
  }

  private static SimpleLimiter<Void> limiter(WorkClass workClass, HttpSettings.ClassLimits limits,
      double latencyTolerance) {
    Gradient2Limit limit = Gradient2Limit.newBuilder()
        .initialLimit(limits.initialLimit())
        .minLimit(limits.minLimit())
        .maxConcurrency(limits.maxLimit())
        .rttTolerance(latencyTolerance)
        .build();
    return SimpleLimiter.newBuilder().named("troupe-http-" + workClass.label()).limit(limit).build();
  }

  /**
   * The class of a request with {@code method} and {@code path} (the URI's path, e.g. {@code
   * /v1/entities/Account/a1/keys/balance}). Unknown paths go by method (reads or writes), so that
   * no request escapes the limits by being malformed; only {@code /metrics} and {@code /v1/health}
   * (and below) are exempt.
   */
  static WorkClass classify(String method, String path) {
    if (path.equals("/metrics") || path.equals("/v1/health") || path.startsWith("/v1/health/")) {
      return WorkClass.EXEMPT;
    }
    boolean read = method.equals("GET") || method.equals("HEAD");
    String resource = resource(path);
    return switch (resource) {
      case "transactions" -> read && path.equals("/v1/transactions/recent")
          ? WorkClass.READS : WorkClass.TRANSACTIONS;
      case "dependencies" -> read ? WorkClass.READS : WorkClass.TRANSACTIONS;
      case "snapshot-read" -> WorkClass.READS;
      default -> read ? WorkClass.READS : WorkClass.WRITES;
    };
  }

  /** The segment after {@code /v1/}, or "" for any other path (also {@link Authorization}'s). */
  static String resource(String path) {
    String prefix = "/v1/";
    if (!path.startsWith(prefix)) {
      return "";
    }
    int end = path.indexOf('/', prefix.length());
    return path.substring(prefix.length(), end < 0 ? path.length() : end);
  }

  /**
   * Admits a request of {@code workClass} (not {@link WorkClass#EXEMPT}), or refuses it: empty
   * when the cap or the class's limit is reached, counted as a refusal of the class.
   */
  Optional<Permit> admit(WorkClass workClass) {
    Invariants.check(workClass != WorkClass.EXEMPT, "exempt requests are never admitted");
    ClassState state = classes.get(workClass);
    if (inFlight.incrementAndGet() > maxInFlightRequests) {
      inFlight.decrementAndGet();
      state.refused.increment();
      return Optional.empty();
    }
    Limiter.Listener listener = null;
    if (state.limiter != null) {
      Optional<Limiter.Listener> acquired = state.limiter.acquire(null);
      if (acquired.isEmpty()) {
        inFlight.decrementAndGet();
        state.refused.increment();
        return Optional.empty();
      }
      listener = acquired.get();
    }
    state.inFlight.incrementAndGet();
    return Optional.of(new Permit(state, listener));
  }

  /**
   * The answer to a refused request of {@code workClass}: {@code 429 overloaded} with {@code
   * Retry-After}.
   */
  HttpResponse refusal(WorkClass workClass) {
    String message = "the server is serving as many " + workClass.label() + " as it takes on"
        + " without queueing (now " + limit(workClass) + "; at most " + maxInFlightRequests
        + " requests in all); retry after " + settings.retryAfterSeconds() + " s";
    return RequestSupport.error(new TroupeException(ErrorCode.OVERLOADED, message))
        .addHeader(RetryAfter.create(settings.retryAfterSeconds()));
  }

  /**
   * An admitted request's answer, with {@code Retry-After} added to a {@code 503 unavailable}
   * (memory short, storage failed): the same hint as a refusal at admission, so a client backs
   * off the same way whichever layer turned it away.
   */
  HttpResponse withRetryAfter(HttpResponse response) {
    return response.status().intValue() == 503 && response.getHeader("Retry-After").isEmpty()
        ? response.addHeader(RetryAfter.create(settings.retryAfterSeconds()))
        : response;
  }

  /** A class's current limit: adaptive, or the cap when not adaptive. */
  int limit(WorkClass workClass) {
    SimpleLimiter<Void> limiter = classes.get(workClass).limiter;
    return limiter == null ? maxInFlightRequests : Math.min(limiter.getLimit(), maxInFlightRequests);
  }

  int inFlight(WorkClass workClass) {
    return classes.get(workClass).inFlight.get();
  }

  long refused(WorkClass workClass) {
    return classes.get(workClass).refused.sum();
  }

  /** Requests admitted and not yet answered, all classes. */
  int inFlight() {
    return inFlight.get();
  }

  /** Requests refused, all classes. */
  long refused() {
    long total = 0;
    for (WorkClass workClass : WorkClass.LIMITED) {
      total += refused(workClass);
    }
    return total;
  }

  /** An admitted request's place; released once, when its answer is ready. */
  final class Permit {
    private final ClassState state;
    private final Limiter.Listener listener;
    private final AtomicBoolean released = new AtomicBoolean();

    private Permit(ClassState state, Limiter.Listener listener) {
      this.state = state;
      this.listener = listener;
    }

    /** Gives the place back and tells the class's limit how the request went. */
    void release(Outcome outcome) {
      Invariants.check(released.compareAndSet(false, true),
          "a request admission permit was released twice");
      state.inFlight.decrementAndGet();
      inFlight.decrementAndGet();
      if (listener != null) {
        switch (outcome) {
          case SUCCESS -> listener.onSuccess();
          case DROPPED -> listener.onDropped();
          case IGNORED -> listener.onIgnore();
        }
      }
    }
  }
}
