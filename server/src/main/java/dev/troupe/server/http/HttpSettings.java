package dev.troupe.server.http;

import com.typesafe.config.Config;
import dev.troupe.model.ValueLimits;
import dev.troupe.runtime.RuntimeSettings;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
    int maxProjectionKeys,
    int maxInFlightRequests,
    long bodyReadTimeoutMillis,
    long idleTimeoutMillis,
    long requestTimeoutMillis,
    RequestAdmissionSettings requestAdmission,
    List<Authorization.Token> tokens,
    CorsSettings cors,
    TlsSettings tls) {

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
        positive(http, "max-projection-keys"),
        positive(http, "max-in-flight-requests"),
        positiveMillis(http, "body-read-timeout-millis"),
        positiveMillis(http, "idle-timeout-millis"),
        positiveMillis(http, "request-timeout-millis"),
        RequestAdmissionSettings.fromConfig(http.getConfig("request-admission")),
        tokens(http),
        CorsSettings.fromConfig(http.getConfig("cors")),
        TlsSettings.fromConfig(http.getConfig("tls")));
  }

  /** These settings with TLS from {@code tls} (the {@code serve --tls-*} options). */
  public HttpSettings withTls(TlsSettings tls) {
    return new HttpSettings(host, port, maxBodyBytes, values, maxIdLength, maxKeyLength,
        maxTypeNameLength, maxProjectionKeys, maxInFlightRequests, bodyReadTimeoutMillis, idleTimeoutMillis,
        requestTimeoutMillis, requestAdmission, tokens, cors, tls);
  }

  /**
   * Why this server must not start as configured, or empty: bound to an address other than
   * loopback, anyone who can reach it could do anything, so it needs tokens ({@code
   * troupe.http.auth.tokens}). An address that does not resolve is left to the bind to report.
   */
  public java.util.Optional<String> exposureProblem() {
    if (!tokens.isEmpty()) {
      return java.util.Optional.empty();
    }
    try {
      if (InetAddress.getByName(host).isLoopbackAddress()) {
        return java.util.Optional.empty();
      }
    } catch (UnknownHostException e) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of("refusing to listen on " + host + " without authentication:"
        + " an address other than loopback needs at least one token in troupe.http.auth.tokens"
        + " (create one with `troupe token create --name NAME --scopes read,write`)");
  }

  /** {@code troupe.http.auth.tokens}: each {name, sha256, scopes}; names unique. */
  private static List<Authorization.Token> tokens(Config http) {
    List<Authorization.Token> tokens = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (Config token : http.getConfigList("auth.tokens")) {
      String name = token.getString("name");
      if (name.isBlank() || !names.add(name)) {
        throw new IllegalArgumentException(
            "troupe.http.auth.tokens: every token needs a name of its own, '" + name
                + "' is blank or repeated");
      }
      Set<Authorization.Scope> scopes = new HashSet<>();
      for (String scope : token.getStringList("scopes")) {
        scopes.add(Authorization.Scope.parse(scope));
      }
      tokens.add(new Authorization.Token(name, token.getString("sha256"), scopes));
    }
    return List.copyOf(tokens);
  }

  /**
   * {@code troupe.http.cors}: the origins whose browser pages may call the API ("*" for any);
   * empty turns CORS off.
   *
   * @param maxAgeSeconds how long a browser may cache a preflight's answer
   */
  public record CorsSettings(List<String> allowedOrigins, long maxAgeSeconds) {
    static CorsSettings fromConfig(Config cors) {
      long maxAgeSeconds = cors.getLong("max-age-seconds");
      if (maxAgeSeconds < 0) {
        throw new IllegalArgumentException(
            "troupe.http.cors.max-age-seconds must not be negative, was " + maxAgeSeconds);
      }
      return new CorsSettings(List.copyOf(cors.getStringList("allowed-origins")), maxAgeSeconds);
    }

    public boolean enabled() {
      return !allowedOrigins.isEmpty();
    }

    /**
     * The {@code Access-Control-Allow-Origin} value for a request from {@code origin}: "*" when any
     * origin is allowed, the origin itself when listed (exact match, as browsers send it: scheme,
     * host and port), empty when CORS is off or the origin not allowed.
     */
    public java.util.Optional<String> allowOriginFor(String origin) {
      if (allowedOrigins.contains("*")) {
        return java.util.Optional.of("*");
      }
      return allowedOrigins.contains(origin) ? java.util.Optional.of(origin)
          : java.util.Optional.empty();
    }
  }

  /**
   * {@code troupe.http.tls}: HTTPS from a PEM certificate chain and PKCS#8 private key, or from a
   * PKCS#12 keystore; all empty means plain HTTP. Paths are empty strings when not set.
   */
  public record TlsSettings(String certificatePath, String keyPath, String keystorePath,
      String keystorePassword) {
    public static final TlsSettings OFF = new TlsSettings("", "", "", "");

    static TlsSettings fromConfig(Config tls) {
      return new TlsSettings(tls.getString("certificate-path"), tls.getString("key-path"),
          tls.getString("keystore-path"), tls.getString("keystore-password")).checked();
    }

    /** Both PEM files or neither; PEM or a keystore, not both. */
    public TlsSettings checked() {
      if (certificatePath.isEmpty() != keyPath.isEmpty()) {
        throw new IllegalArgumentException(
            "TLS needs both a certificate (troupe.http.tls.certificate-path, --tls-certificate)"
                + " and its private key (troupe.http.tls.key-path, --tls-key)");
      }
      if (!certificatePath.isEmpty() && !keystorePath.isEmpty()) {
        throw new IllegalArgumentException(
            "TLS takes PEM files or a PKCS#12 keystore (troupe.http.tls.keystore-path), not both");
      }
      return this;
    }

    public boolean enabled() {
      return !certificatePath.isEmpty() || !keystorePath.isEmpty();
    }
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

  private static long positiveMillis(Config http, String path) {
    long value = http.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException("troupe.http." + path + " must be positive, was " + value);
    }
    return value;
  }

  private static int positive(Config http, String path) {
    int value = http.getInt(path);
    if (value <= 0) {
      throw new IllegalArgumentException("troupe.http." + path + " must be positive, was " + value);
    }
    return value;
  }
}
