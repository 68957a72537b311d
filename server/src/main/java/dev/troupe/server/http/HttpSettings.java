package dev.troupe.server.http;

import com.typesafe.config.Config;
import dev.troupe.model.ValueLimits;
import dev.troupe.runtime.RuntimeSettings;

/**
 * The REST server's settings and request limits, parsed once from {@code troupe.http}; the limits
 * on values ({@code values}) are the engine's, from {@code troupe.limits}, so a value a client
 * sends and a value a turn computes meet the same ones.
 */
public record HttpSettings(
    String host,
    int port,
    int maxBodyBytes,
    ValueLimits values,
    int maxIdLength,
    int maxKeyLength,
    int maxTypeNameLength,
    int maxInFlightRequests,
    long bodyReadTimeoutMillis,
    RequestAdmissionSettings requestAdmission) {

  public static HttpSettings fromConfig(Config config) {
    Config http = config.getConfig("troupe.http");
    return new HttpSettings(
        http.getString("host"),
        http.getInt("port"),
        http.getInt("max-body-bytes"),
        RuntimeSettings.valueLimits(config.getConfig("troupe.limits")),
        http.getInt("max-id-length"),
        http.getInt("max-key-length"),
        http.getInt("max-type-name-length"),
        positive(http, "max-in-flight-requests"),
        http.getLong("body-read-timeout-millis"),
        RequestAdmissionSettings.fromConfig(http.getConfig("request-admission")));
  }

  /**
   * {@code troupe.http.request-admission}: how requests are admitted or shed ({@link
   * RequestAdmission}).
   *
   * @param adaptive whether each class of work has its own adaptive concurrency limit; when false
   *     only {@code max-in-flight-requests} applies (the fixed limit of before)
   * @param retryAfterSeconds what a refused request's {@code Retry-After} header says
   * @param latencyTolerance how many times its long-term average the latency of admitted work may
   *     reach before a class's limit shrinks (at least 1)
   */
  public record RequestAdmissionSettings(
      boolean adaptive,
      long retryAfterSeconds,
      double latencyTolerance,
      ClassLimits reads,
      ClassLimits writes,
      ClassLimits transactions) {

    static RequestAdmissionSettings fromConfig(Config admission) {
      long retryAfterSeconds = admission.getLong("retry-after-seconds");
      if (retryAfterSeconds < 1) {
        throw new IllegalArgumentException(
            "troupe.http.request-admission.retry-after-seconds must be at least 1, was "
                + retryAfterSeconds);
      }
      double latencyTolerance = admission.getDouble("latency-tolerance");
      if (!(latencyTolerance >= 1) || Double.isInfinite(latencyTolerance)) {
        throw new IllegalArgumentException(
            "troupe.http.request-admission.latency-tolerance must be a number >= 1, was "
                + latencyTolerance);
      }
      return new RequestAdmissionSettings(
          admission.getBoolean("adaptive"),
          retryAfterSeconds,
          latencyTolerance,
          ClassLimits.fromConfig(admission, "reads"),
          ClassLimits.fromConfig(admission, "writes"),
          ClassLimits.fromConfig(admission, "transactions"));
    }
  }

  /**
   * One class's adaptive concurrency limit, in requests being served at once: it starts at {@code
   * initialLimit} and stays within {@code minLimit..maxLimit}; {@code 1 <= minLimit <= initialLimit
   * <= maxLimit}.
   */
  public record ClassLimits(int initialLimit, int minLimit, int maxLimit) {
    static ClassLimits fromConfig(Config admission, String workClass) {
      Config limits = admission.getConfig(workClass);
      ClassLimits parsed = new ClassLimits(limits.getInt("initial-limit"),
          limits.getInt("min-limit"), limits.getInt("max-limit"));
      if (parsed.minLimit < 1 || parsed.initialLimit < parsed.minLimit
          || parsed.maxLimit < parsed.initialLimit) {
        throw new IllegalArgumentException("troupe.http.request-admission." + workClass
            + " needs 1 <= min-limit <= initial-limit <= max-limit, was min-limit="
            + parsed.minLimit + ", initial-limit=" + parsed.initialLimit + ", max-limit="
            + parsed.maxLimit);
      }
      return parsed;
    }
  }

  private static int positive(Config http, String path) {
    int value = http.getInt(path);
    if (value <= 0) {
      throw new IllegalArgumentException("troupe.http." + path + " must be positive, was " + value);
    }
    return value;
  }
}
