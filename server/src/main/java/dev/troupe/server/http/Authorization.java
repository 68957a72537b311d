package dev.troupe.server.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Who may do what: the pure decision of the REST API's authentication and authorization, from a
 * request's method, path and {@code Authorization} header to allowed, 401 or 403. No Pekko, no
 * clock, no I/O: {@link RestApi} asks it before admission counting and before any body is read.
 *
 * <p>Tokens: bearer tokens from configuration ({@code troupe.http.auth.tokens}), each kept only as
 * the hex of its SHA-256. Why a plain SHA-256 and not a salted slow hash (bcrypt, Argon2): those
 * exist to make guessing human-chosen passwords expensive after a leak of the hashes. Troupe's
 * tokens are 256 random bits minted by {@code troupe token create}; no dictionary or brute force
 * over 2^256 candidates is possible however fast the hash, so a slow hash would only slow every
 * request down, and a salt would only defeat precomputed tables that cannot exist for random
 * secrets. A leaked configuration file therefore does not leak a usable token.
 *
 * <p>Scopes: {@code read} (GET of entities, keys, dependencies, types; {@code POST
 * /v1/snapshot-read}), {@code write} (entity and key writes, actions, every {@code
 * /v1/transactions} route), {@code admin} ({@code PUT /v1/types/{type}}, {@code POST} and {@code
 * DELETE /v1/dependencies}, {@code POST /v1/replication/peers} and {@code DELETE
 * /v1/replication/peers/{name}}). Scopes do not imply one another: a token lists each it may use. Open
 * to all: {@code /v1/health} and below, {@code GET /v1/openapi.json}, the console's files ({@code
 * GET /console} and below). {@code GET /v1/transactions/recent} needs {@code read}. {@code /metrics} takes any
 * valid token. A path no route knows needs {@code read} for GET and HEAD and {@code write}
 * otherwise, so that probing unknown paths takes a token too.
 *
 * <p>Peers: {@code /v1/replication/log} and {@code /v1/replication/stream} (another data centre
 * pulling this one's replication log) and {@code /v1/replication/bootstrap} (a data centre added
 * to the set reading this one's bootstrap image) take no client token and no client token opens
 * them: they need the replication secret all DCs share
 * ({@link PeerAccess}), as {@code Bearer <secret>}, compared in constant time the same way. Without
 * a secret it is refused, unless {@code troupe.replication.allow-unauthenticated} (tests only).
 *
 * <p>Invariants: with no tokens configured every request is allowed (the server then only listens
 * on loopback: {@link HttpSettings#exposureProblem}); the comparison of a presented token's hash
 * with the stored ones takes the same time whichever entry matches, or none (every entry is
 * compared with {@link MessageDigest#isEqual}, which does not stop at the first differing byte).
 *
 * <p>Concurrency: immutable; safe from any thread.
 */
public final class Authorization {
  /** What a token may do. */
  public enum Scope {
    READ,
    WRITE,
    ADMIN;

    /** The scope's name in settings and messages: {@code read}, {@code write}, {@code admin}. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The scope named {@code text}; anything else is a settings mistake. */
    public static Scope parse(String text) {
      for (Scope scope : values()) {
        if (scope.label().equals(text)) {
          return scope;
        }
      }
      throw new IllegalArgumentException(
          "unknown token scope '" + text + "' (expected read, write or admin)");
    }
  }

  /**
   * A configured token: its name (for logs and operators), the hex SHA-256 of its secret, and its
   * scopes (at least one).
   */
  public record Token(String name, String sha256, Set<Scope> scopes) {
    public Token {
      if (sha256 == null || !sha256.matches("[0-9a-f]{64}")) {
        throw new IllegalArgumentException("token '" + name
            + "': sha256 must be the 64 lowercase hex digits of the token's SHA-256");
      }
      if (scopes.isEmpty()) {
        throw new IllegalArgumentException("token '" + name + "' needs at least one scope");
      }
      scopes = Set.copyOf(scopes);
    }
  }

  /** What a request needs before it is served. */
  public sealed interface Requirement {
    /** Anyone: health and the API's description. */
    record Open() implements Requirement {}

    /** Any valid token, whatever its scopes ({@code /metrics}). */
    record AnyToken() implements Requirement {}

    /** A valid token with {@code scope}. */
    record Needs(Scope scope) implements Requirement {}

    /** The replication secret of {@link PeerAccess}: a peer data centre pulling the log. */
    record PeerSecret() implements Requirement {}
  }

  /**
   * Who may pull this DC's replication log: the peers presenting {@code secret} (kept as the hex of
   * its SHA-256, like tokens), or anyone when {@code allowUnauthenticated} (tests only).
   */
  public record PeerAccess(Optional<String> secretSha256, boolean allowUnauthenticated) {
    /** No secret, nobody allowed: a node that replicates nowhere. */
    public static final PeerAccess NONE = new PeerAccess(Optional.empty(), false);

    public PeerAccess {
      if (secretSha256.isPresent() && !secretSha256.get().matches("[0-9a-f]{64}")) {
        throw new IllegalArgumentException("the replication secret's hash must be 64 hex digits");
      }
    }

    /** Access for the peers presenting {@code secret} (empty: none configured). */
    public static PeerAccess of(Optional<String> secret, boolean allowUnauthenticated) {
      return new PeerAccess(secret.map(Authorization::sha256Hex), allowUnauthenticated);
    }
  }

  /** The decision on one request. */
  public sealed interface Decision {
    /** Served; {@code tokenName} is empty when no token was needed or none is configured. */
    record Allowed(Optional<String> tokenName) implements Decision {}

    /** 401 unauthorized: no token, a malformed header or a token no entry knows. */
    record Unauthenticated(String message) implements Decision {}

    /** 403 forbidden: a valid token without the scope the route needs. */
    record Forbidden(String message) implements Decision {}
  }

  private static final String BEARER = "bearer ";

  private final List<Token> tokens;
  private final byte[][] hashes;
  private final PeerAccess peerAccess;
  private final byte[] peerSecretHash;

  public Authorization(List<Token> tokens) {
    this(tokens, PeerAccess.NONE);
  }

  public Authorization(List<Token> tokens, PeerAccess peerAccess) {
    this.peerAccess = peerAccess;
    this.peerSecretHash = peerAccess.secretSha256().map(HexFormat.of()::parseHex).orElse(null);
    this.tokens = List.copyOf(tokens);
    this.hashes = new byte[this.tokens.size()][];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = HexFormat.of().parseHex(this.tokens.get(i).sha256());
    }
  }

  /** Whether any token is configured; without, every request is allowed. */
  public boolean enabled() {
    return !tokens.isEmpty();
  }

  /** What a request with {@code method} and {@code path} (the URI's path) needs. */
  public static Requirement requirement(String method, String path) {
    if (path.equals("/v1/health") || path.startsWith("/v1/health/")) {
      return new Requirement.Open();
    }
    boolean read = method.equals("GET") || method.equals("HEAD");
    if (read && path.equals("/v1/openapi.json")) {
      return new Requirement.Open();
    }
    if (read && ConsoleAssets.isConsolePath(path)) {
      // The console's files hold no data; every call the page makes needs its token.
      return new Requirement.Open();
    }
    if (read && path.equals("/v1/transactions/recent")) {
      // Looking at outcomes changes nothing: a reader's right, unlike every other transactions
      // route.
      return new Requirement.Needs(Scope.READ);
    }
    if (path.equals("/metrics")) {
      return new Requirement.AnyToken();
    }
    if (path.equals("/v1/replication/log") || path.startsWith("/v1/replication/log/")
        || path.equals("/v1/replication/stream") || path.startsWith("/v1/replication/stream/")
        || path.equals("/v1/replication/bootstrap")
        || path.startsWith("/v1/replication/bootstrap/")) {
      return new Requirement.PeerSecret();
    }
    if (!read && (path.equals("/v1/replication/peers")
        || path.startsWith("/v1/replication/peers/"))) {
      // Adding or removing a data centre changes what this DC pulls and keeps: an operator's act.
      return new Requirement.Needs(Scope.ADMIN);
    }
    String resource = RequestAdmission.resource(path);
    if (resource.equals("transactions")) {
      return new Requirement.Needs(Scope.WRITE);
    }
    if (resource.equals("snapshot-read")) {
      return new Requirement.Needs(Scope.READ);
    }
    if (read) {
      return new Requirement.Needs(Scope.READ);
    }
    if (resource.equals("types") || resource.equals("dependencies")) {
      return new Requirement.Needs(Scope.ADMIN);
    }
    return new Requirement.Needs(Scope.WRITE);
  }

  /**
   * The decision on a request with {@code method} and {@code path} whose {@code Authorization}
   * header is {@code authorizationHeader} (empty when absent).
   */
  public Decision decide(String method, String path, Optional<String> authorizationHeader) {
    Requirement requirement = requirement(method, path);
    if (requirement instanceof Requirement.PeerSecret) {
      return decidePeer(authorizationHeader);
    }
    if (!enabled() || requirement instanceof Requirement.Open) {
      return new Decision.Allowed(Optional.empty());
    }
    if (authorizationHeader.isEmpty()) {
      return new Decision.Unauthenticated(
          "this server needs a bearer token: send 'Authorization: Bearer <token>'");
    }
    String header = authorizationHeader.get().trim();
    if (!header.toLowerCase(Locale.ROOT).startsWith(BEARER)) {
      return new Decision.Unauthenticated(
          "the Authorization header must be 'Bearer <token>'");
    }
    Optional<Token> token = lookup(header.substring(BEARER.length()).trim());
    if (token.isEmpty()) {
      return new Decision.Unauthenticated("the bearer token is not one this server knows");
    }
    if (requirement instanceof Requirement.Needs(Scope scope)
        && !token.get().scopes().contains(scope)) {
      return new Decision.Forbidden("token '" + token.get().name() + "' lacks the scope '"
          + scope.label() + "' that " + method + " " + path + " needs");
    }
    return new Decision.Allowed(Optional.of(token.get().name()));
  }

  /** A pull of the replication log: the shared secret, compared in constant time. */
  private Decision decidePeer(Optional<String> authorizationHeader) {
    if (peerSecretHash == null) {
      return peerAccess.allowUnauthenticated() ? new Decision.Allowed(Optional.empty())
          : new Decision.Unauthenticated("this server takes no replication pulls: it has no"
              + " replication secret (troupe.replication.secret, --replication-secret-file)");
    }
    String header = authorizationHeader.map(String::trim).orElse("");
    if (!header.toLowerCase(Locale.ROOT).startsWith(BEARER)) {
      return new Decision.Unauthenticated(
          "a replication pull needs 'Authorization: Bearer <replication secret>'");
    }
    byte[] presented = sha256(header.substring(BEARER.length()).trim());
    if (!MessageDigest.isEqual(presented, peerSecretHash)) {
      return new Decision.Unauthenticated("the bearer secret is not this DC's replication secret");
    }
    return new Decision.Allowed(Optional.empty());
  }

  /** The configured token whose secret is {@code secret}, compared in constant time. */
  Optional<Token> lookup(String secret) {
    byte[] presented = sha256(secret);
    Token found = null;
    for (int i = 0; i < hashes.length; i++) {
      // No early exit: every entry is compared, so timing says nothing about which matched.
      if (MessageDigest.isEqual(presented, hashes[i]) && found == null) {
        found = tokens.get(i);
      }
    }
    return Optional.ofNullable(found);
  }

  /** The hex SHA-256 of {@code secret}'s UTF-8 bytes: what configuration stores of a token. */
  public static String sha256Hex(String secret) {
    return HexFormat.of().formatHex(sha256(secret));
  }

  private static byte[] sha256(String secret) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }
}
