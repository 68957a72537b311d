package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.Invariants;
import dev.troupe.model.Json;
import dev.troupe.server.http.RequestAdmission.Outcome;
import dev.troupe.server.http.RequestAdmission.Permit;
import dev.troupe.server.http.RequestAdmission.WorkClass;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RequestAdmissionTest {

  /** reference.conf with {@code overrides} (HOCON) on top. */
  private static HttpSettings settings(String overrides) {
    return HttpSettings.fromConfig(
        ConfigFactory.parseString(overrides).withFallback(ConfigFactory.defaultReference()));
  }

  /** Every class fixed at {@code limit} (min = initial = max), the cap at {@code cap}. */
  private static HttpSettings fixedClassLimits(int limit, int cap) {
    StringBuilder overrides = new StringBuilder("troupe.http.max-in-flight-requests=" + cap + "\n");
    for (String workClass : List.of("reads", "writes", "transactions")) {
      String prefix = "troupe.http.request-admission." + workClass;
      overrides.append(prefix).append(".min-limit=").append(limit).append('\n')
          .append(prefix).append(".initial-limit=").append(limit).append('\n')
          .append(prefix).append(".max-limit=").append(limit).append('\n');
    }
    return settings(overrides.toString());
  }

  @ParameterizedTest(name = "{0} {1} -> {2}")
  @CsvSource({
    "GET, /metrics, EXEMPT",
    "POST, /metrics, EXEMPT",
    "GET, /v1/health, EXEMPT",
    "GET, /v1/health/live, EXEMPT",
    "GET, /v1/health/ready, EXEMPT",
    "GET, /v1/healthy, READS",
    "GET, /metrics/x, READS",
    "GET, /v1/entities/Account/a1, READS",
    "GET, /v1/entities/Account/a1/keys/balance, READS",
    "GET, /v1/entities/Account/a1/dependencies, READS",
    "GET, /v1/types, READS",
    "GET, /v1/types/Account, READS",
    "GET, /v1/dependencies/some-id, READS",
    "POST, /v1/snapshot-read, READS",
    "PUT, /v1/entities/Account/a1/keys/balance, WRITES",
    "DELETE, /v1/entities/Account/a1/keys/balance, WRITES",
    "PATCH, /v1/entities/Account/a1, WRITES",
    "DELETE, /v1/entities/Account/a1, WRITES",
    "POST, /v1/entities/Account/a1/actions/deposit, WRITES",
    "POST, /v1/entities/Account/a1/keys/n/increment, WRITES",
    "POST, /v1/entities/Account/a1/keys/s/add, WRITES",
    "POST, /v1/entities/Account/a1/keys/s/remove, WRITES",
    "PUT, /v1/types/Account, WRITES",
    "POST, /v1/transactions, TRANSACTIONS",
    "POST, /v1/transactions/begin, TRANSACTIONS",
    "GET, /v1/transactions/recent, READS",
    "GET, /v1/entities/Account/a1/versions, READS",
    "GET, /console/app.js, READS",
    "POST, /v1/transactions/7/commit, TRANSACTIONS",
    "POST, /v1/transactions/7/read, TRANSACTIONS",
    "POST, /v1/dependencies, TRANSACTIONS",
    "DELETE, /v1/dependencies/some-id, TRANSACTIONS",
    "GET, /, READS",
    "GET, /v2/anything, READS",
    "POST, /nowhere, WRITES",
    "OPTIONS, /v1/entities/Account/a1, WRITES",
  })
  void classifiesByMethodAndPath(String method, String path, WorkClass expected) {
    assertEquals(expected, RequestAdmission.classify(method, path));
  }

  @Test
  void aReachedLimitRefusesAndAReleaseAdmitsAgain() {
    RequestAdmission admission = new RequestAdmission(fixedClassLimits(2, 100));
    Permit first = admission.admit(WorkClass.WRITES).orElseThrow();
    Permit second = admission.admit(WorkClass.WRITES).orElseThrow();
    assertTrue(admission.admit(WorkClass.WRITES).isEmpty(), "a third write past a limit of 2");
    assertEquals(1, admission.refused(WorkClass.WRITES));
    assertEquals(2, admission.inFlight(WorkClass.WRITES));
    // Another class has its own limit.
    Permit read = admission.admit(WorkClass.READS).orElseThrow();
    first.release(Outcome.SUCCESS);
    Permit third = admission.admit(WorkClass.WRITES).orElseThrow();
    assertEquals(1, admission.refused(WorkClass.WRITES));
    assertEquals(0, admission.refused(WorkClass.READS));
    assertEquals(4, admission.refused() + admission.inFlight());
    second.release(Outcome.IGNORED);
    third.release(Outcome.DROPPED);
    read.release(Outcome.SUCCESS);
    assertEquals(0, admission.inFlight());
    assertEquals(0, admission.inFlight(WorkClass.WRITES));
  }

  @Test
  void theCapHoldsAcrossClassesWhateverTheirLimits() {
    RequestAdmission admission = new RequestAdmission(fixedClassLimits(10, 3));
    List<Permit> admitted = new ArrayList<>();
    admitted.add(admission.admit(WorkClass.READS).orElseThrow());
    admitted.add(admission.admit(WorkClass.WRITES).orElseThrow());
    admitted.add(admission.admit(WorkClass.TRANSACTIONS).orElseThrow());
    assertTrue(admission.admit(WorkClass.READS).isEmpty());
    assertEquals(1, admission.refused(WorkClass.READS));
    assertEquals(3, admission.limit(WorkClass.READS), "a class limit above the cap shows the cap");
    admitted.remove(0).release(Outcome.SUCCESS);
    assertTrue(admission.admit(WorkClass.READS).isPresent());
  }

  @Test
  void withoutAdaptiveLimitsOnlyTheCapApplies() {
    RequestAdmission admission = new RequestAdmission(settings("""
        troupe.http.max-in-flight-requests = 40
        troupe.http.request-admission.adaptive = false
        troupe.http.request-admission.writes { min-limit = 1, initial-limit = 1, max-limit = 1 }
        """));
    for (int i = 0; i < 40; i++) {
      assertTrue(admission.admit(WorkClass.WRITES).isPresent(), "write " + i);
    }
    assertTrue(admission.admit(WorkClass.WRITES).isEmpty());
    assertEquals(40, admission.limit(WorkClass.WRITES));
  }

  @Test
  void aRefusalIsJson429WithRetryAfter() {
    RequestAdmission admission = new RequestAdmission(
        settings("troupe.http.request-admission.retry-after-seconds = 7"));
    HttpResponse refusal = admission.refusal(WorkClass.TRANSACTIONS);
    assertEquals(429, refusal.status().intValue());
    Optional<RetryAfter> retryAfter = refusal.getHeader(RetryAfter.class);
    assertEquals(Optional.of(7L), retryAfter.orElseThrow().getDelaySeconds());
    byte[] body = ((org.apache.pekko.http.scaladsl.model.HttpEntity.Strict) refusal.entity())
        .getData().toArray();
    assertEquals("overloaded", Json.parse(body).path("error").asText());
    assertTrue(Json.parse(body).path("message").asText().contains("transactions"));
  }

  @Test
  void aPermitIsReleasedOnce() {
    RequestAdmission admission = new RequestAdmission(fixedClassLimits(2, 100));
    Permit permit = admission.admit(WorkClass.READS).orElseThrow();
    permit.release(Outcome.SUCCESS);
    assertThrows(Invariants.InvariantViolation.class, () -> permit.release(Outcome.SUCCESS));
    assertEquals(0, admission.inFlight(WorkClass.READS));
  }

  @Test
  void exemptRequestsAreNeverAdmitted() {
    RequestAdmission admission = new RequestAdmission(fixedClassLimits(2, 100));
    assertThrows(Invariants.InvariantViolation.class, () -> admission.admit(WorkClass.EXEMPT));
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({"200, SUCCESS", "201, SUCCESS", "400, IGNORED", "404, IGNORED", "409, IGNORED",
      "413, IGNORED", "429, DROPPED", "500, DROPPED", "503, DROPPED"})
  void anAnswersStatusIsItsOutcome(int status, Outcome expected) {
    assertEquals(expected, Outcome.ofStatus(status));
  }

  @Test
  void limitsAreValidated() {
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.request-admission.reads { min-limit = 10, initial-limit = 5 }"));
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.request-admission.writes { initial-limit = 600, max-limit = 500 }"));
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.request-admission.transactions.min-limit = 0"));
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.request-admission.retry-after-seconds = 0"));
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.request-admission.latency-tolerance = 0.5"));
    assertThrows(IllegalArgumentException.class, () -> settings(
        "troupe.http.max-in-flight-requests = 0"));
  }
}
