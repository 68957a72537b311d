package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.http.Authorization.Decision;
import dev.troupe.server.http.Authorization.Requirement;
import dev.troupe.server.http.Authorization.Scope;
import dev.troupe.server.http.Authorization.Token;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class AuthorizationTest {
  private static final String READER = "reader-secret";
  private static final String WRITER = "writer-secret";
  private static final Authorization AUTHORIZATION = new Authorization(List.of(
      new Token("reader", Authorization.sha256Hex(READER), Set.of(Scope.READ)),
      new Token("writer", Authorization.sha256Hex(WRITER), Set.of(Scope.READ, Scope.WRITE))));

  private static Requirement needs(Scope scope) {
    return new Requirement.Needs(scope);
  }

  @Test
  void eachRouteNeedsTheContractsScope() {
    Object[][] table = {
        {"GET", "/v1/health", new Requirement.Open()},
        {"GET", "/v1/health/live", new Requirement.Open()},
        {"POST", "/v1/health/ready", new Requirement.Open()},
        {"GET", "/v1/openapi.json", new Requirement.Open()},
        {"HEAD", "/v1/openapi.json", new Requirement.Open()},
        {"PUT", "/v1/openapi.json", needs(Scope.WRITE)},
        {"GET", "/v1/healthy", needs(Scope.READ)},
        {"GET", "/metrics", new Requirement.AnyToken()},
        {"GET", "/v1/types", needs(Scope.READ)},
        {"GET", "/v1/types/Account", needs(Scope.READ)},
        {"PUT", "/v1/types/Account", needs(Scope.ADMIN)},
        {"GET", "/v1/entities/A/a", needs(Scope.READ)},
        {"HEAD", "/v1/entities/A/a/keys/k", needs(Scope.READ)},
        {"GET", "/v1/entities/A/a/dependencies", needs(Scope.READ)},
        {"PUT", "/v1/entities/A/a/keys/k", needs(Scope.WRITE)},
        {"PATCH", "/v1/entities/A/a", needs(Scope.WRITE)},
        {"DELETE", "/v1/entities/A/a", needs(Scope.WRITE)},
        {"POST", "/v1/entities/A/a/keys/k/increment", needs(Scope.WRITE)},
        {"POST", "/v1/entities/A/a/actions/open", needs(Scope.WRITE)},
        {"POST", "/v1/transactions", needs(Scope.WRITE)},
        {"POST", "/v1/transactions/begin", needs(Scope.WRITE)},
        {"GET", "/v1/transactions/recent", needs(Scope.READ)},
        {"POST", "/v1/transactions/recent", needs(Scope.WRITE)},
        {"GET", "/v1/entities/A/a/versions", needs(Scope.READ)},
        {"GET", "/console", new Requirement.Open()},
        {"GET", "/console/app.js", new Requirement.Open()},
        {"HEAD", "/console/", new Requirement.Open()},
        {"POST", "/console", needs(Scope.WRITE)},
        {"GET", "/consoles", needs(Scope.READ)},
        {"POST", "/v1/transactions/7/read", needs(Scope.WRITE)},
        {"POST", "/v1/snapshot-read", needs(Scope.READ)},
        {"POST", "/v1/dependencies", needs(Scope.ADMIN)},
        {"DELETE", "/v1/dependencies/x", needs(Scope.ADMIN)},
        {"GET", "/v1/dependencies/x", needs(Scope.READ)},
        {"GET", "/v1/replication/peers", needs(Scope.READ)},
        {"POST", "/v1/replication/peers", needs(Scope.ADMIN)},
        {"DELETE", "/v1/replication/peers/tokyo", needs(Scope.ADMIN)},
        {"PUT", "/v1/replication/peers/tokyo", needs(Scope.ADMIN)},
        {"GET", "/v1/replication/status", needs(Scope.READ)},
        {"POST", "/nowhere", needs(Scope.WRITE)},
        {"OPTIONS", "/v1/entities/A/a", needs(Scope.WRITE)},
    };
    for (Object[] row : table) {
      assertEquals(row[2], Authorization.requirement((String) row[0], (String) row[1]),
          row[0] + " " + row[1]);
    }
  }

  @Test
  void withoutTokensEverythingIsAllowed() {
    Authorization open = new Authorization(List.of());
    assertEquals(new Decision.Allowed(Optional.empty()),
        open.decide("DELETE", "/v1/entities/A/a", Optional.empty()));
  }

  @Test
  void decisions() {
    assertInstanceOf(Decision.Unauthenticated.class,
        AUTHORIZATION.decide("GET", "/v1/types", Optional.empty()));
    assertInstanceOf(Decision.Unauthenticated.class,
        AUTHORIZATION.decide("GET", "/v1/types", Optional.of("Bearer nope")));
    assertInstanceOf(Decision.Unauthenticated.class,
        AUTHORIZATION.decide("GET", "/v1/types", Optional.of("Basic " + READER)));
    assertInstanceOf(Decision.Unauthenticated.class,
        AUTHORIZATION.decide("GET", "/v1/types", Optional.of(READER)));
    assertEquals(new Decision.Allowed(Optional.of("reader")),
        AUTHORIZATION.decide("GET", "/v1/types", Optional.of("Bearer " + READER)));
    assertEquals(new Decision.Allowed(Optional.of("reader")),
        AUTHORIZATION.decide("GET", "/v1/types", Optional.of("bearer  " + READER + " ")));
    Decision forbidden =
        AUTHORIZATION.decide("PUT", "/v1/entities/A/a/keys/k", Optional.of("Bearer " + READER));
    assertInstanceOf(Decision.Forbidden.class, forbidden);
    assertTrue(((Decision.Forbidden) forbidden).message().contains("'write'"));
    assertEquals(new Decision.Allowed(Optional.of("writer")),
        AUTHORIZATION.decide("PUT", "/v1/entities/A/a/keys/k", Optional.of("Bearer " + WRITER)));
    assertInstanceOf(Decision.Forbidden.class,
        AUTHORIZATION.decide("PUT", "/v1/types/A", Optional.of("Bearer " + WRITER)));
    assertEquals(new Decision.Allowed(Optional.of("reader")),
        AUTHORIZATION.decide("GET", "/metrics", Optional.of("Bearer " + READER)));
    assertInstanceOf(Decision.Unauthenticated.class,
        AUTHORIZATION.decide("GET", "/metrics", Optional.empty()));
    assertEquals(new Decision.Allowed(Optional.empty()),
        AUTHORIZATION.decide("GET", "/v1/health/ready", Optional.empty()));
  }

  @Test
  void lookupFindsOnlyTheExactSecret() {
    assertEquals("writer", AUTHORIZATION.lookup(WRITER).orElseThrow().name());
    assertTrue(AUTHORIZATION.lookup(WRITER + "x").isEmpty());
    assertTrue(AUTHORIZATION.lookup("").isEmpty());
  }

  @Test
  void sha256HexIsTheStandardDigest() {
    assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        Authorization.sha256Hex(""));
  }

  @Test
  void malformedTokenSettingsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new Token("t", "abc", Set.of(Scope.READ)));
    assertThrows(IllegalArgumentException.class,
        () -> new Token("t", Authorization.sha256Hex("x").toUpperCase(), Set.of(Scope.READ)));
    assertThrows(IllegalArgumentException.class,
        () -> new Token("t", Authorization.sha256Hex("x"), Set.of()));
    assertThrows(IllegalArgumentException.class, () -> Scope.parse("root"));
    assertEquals(Scope.ADMIN, Scope.parse("admin"));
  }

  @Test
  void replicationPullsNeedTheSharedSecretAndNoClientTokenOpensThem() {
    String secret = "0123456789abcdef0123";
    Authorization peers = new Authorization(List.of(new Token("reader",
        Authorization.sha256Hex(READER), Set.of(Scope.READ))),
        Authorization.PeerAccess.of(Optional.of(secret), false));
    assertEquals(new Authorization.Requirement.PeerSecret(),
        Authorization.requirement("GET", "/v1/replication/log"));
    assertEquals(new Authorization.Requirement.PeerSecret(),
        Authorization.requirement("GET", "/v1/replication/stream"));
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/replication/stream", Optional.of("Bearer " + READER)));
    assertEquals(new Decision.Allowed(Optional.empty()),
        peers.decide("GET", "/v1/replication/log", Optional.of("Bearer " + secret)));
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/replication/log", Optional.empty()));
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/replication/log", Optional.of("Bearer " + secret + "x")));
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/replication/log", Optional.of("Bearer " + READER)));
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/replication/log", Optional.of(secret)));
    // The secret is no client token.
    assertInstanceOf(Decision.Unauthenticated.class,
        peers.decide("GET", "/v1/types", Optional.of("Bearer " + secret)));
    // The status is a client's read.
    assertEquals(new Decision.Allowed(Optional.of("reader")),
        peers.decide("GET", "/v1/replication/status", Optional.of("Bearer " + READER)));
    // Without a secret nobody pulls, even from a server without client tokens...
    assertInstanceOf(Decision.Unauthenticated.class, new Authorization(List.of())
        .decide("GET", "/v1/replication/log", Optional.empty()));
    // ...unless allowed outright (tests).
    assertEquals(new Decision.Allowed(Optional.empty()), new Authorization(List.of(),
        Authorization.PeerAccess.of(Optional.empty(), true))
        .decide("GET", "/v1/replication/log", Optional.empty()));
  }
}
