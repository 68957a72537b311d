package dev.troupe.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The client's pure core without a server: the retry decisions of {@link Exchange}, the merge of
 * causal tokens, and the mapping of error answers. (Against a real server: the server module's
 * JavaClient*Test.)
 */
class ClientCoreTest {
  private static final long SECOND = 1_000_000_000L;

  private static JsonNode error(String code) {
    return Wire.parse(("{\"error\":\"" + code + "\",\"message\":\"m\"}").getBytes());
  }

  private static Exchange<String> exchange(Safety safety, RetryPolicy policy) {
    Call<String> call = new Call<>("POST", "/x", java.util.List.of(), null, Calls.JSON, safety,
        (body, replayed) -> replayed ? "replayed" : "done");
    return new Exchange<>(call, policy, "key-1", 0);
  }

  @Test
  void aKeyedWriteIsRetriedWithItsKeyAfterNoAnswerAndOutcomeUnknown() {
    Exchange<String> keyed = exchange(Safety.KEYED, RetryPolicy.DEFAULT);
    assertEquals("key-1", keyed.idempotencyKey());
    assertEquals(new Exchange.Retry<String>(Duration.ofMillis(50)),
        keyed.failed(new IOException("reset"), false, 0));
    assertEquals(new Exchange.Retry<String>(Duration.ofMillis(100)),
        keyed.answered(500, error("outcome_unknown"), false, null, 0), "the backoff doubles");
    // On a retry, 409 conflict means the first attempt still runs: asked again, it is replayed.
    assertInstanceOf(Exchange.Retry.class, keyed.answered(409, error("conflict"), false, null, 0));
    assertEquals(new Exchange.Done<>("replayed"), keyed.answered(200, null, true, null, 0));
  }

  @Test
  void aStepIsSentAgainOnlyWhenItSurelyDidNothing() {
    assertInstanceOf(Exchange.Fail.class, exchange(Safety.ONCE, RetryPolicy.DEFAULT)
        .failed(new IOException("reset"), false, 0));
    assertInstanceOf(Exchange.Retry.class, exchange(Safety.ONCE, RetryPolicy.DEFAULT)
        .failed(new ConnectException("refused"), true, 0));
    assertInstanceOf(Exchange.Fail.class, exchange(Safety.ONCE, RetryPolicy.DEFAULT)
        .answered(503, error("unavailable"), false, null, 0));
    assertInstanceOf(Exchange.Retry.class, exchange(Safety.ONCE, RetryPolicy.DEFAULT)
        .answered(503, error("not_owner"), false, null, 0));
    assertInstanceOf(Exchange.Fail.class, exchange(Safety.ONCE, RetryPolicy.DEFAULT)
        .answered(500, error("outcome_unknown"), false, null, 0));
    // A first attempt's conflict is the request's own.
    assertInstanceOf(Exchange.Fail.class, exchange(Safety.KEYED, RetryPolicy.DEFAULT)
        .answered(409, error("conflict"), false, null, 0));
  }

  @Test
  void retriesAreBoundedInAttemptsAndTimeAndHonourRetryAfter() {
    Exchange<String> bounded = exchange(Safety.SAFE, RetryPolicy.DEFAULT.withMaxAttempts(2));
    assertEquals(new Exchange.Retry<String>(Duration.ofSeconds(3)),
        bounded.answered(429, error("overloaded"), false, Duration.ofSeconds(3), 0));
    Exchange.Next<String> last = bounded.answered(429, error("overloaded"), false, null, 0);
    TroupeClientException refused = ((Exchange.Fail<String>) last).error();
    assertInstanceOf(TroupeClientException.Overloaded.class, refused);
    assertTrue(refused.retryable());
    // A Retry-After ending beyond maxTotal gives up at once.
    Exchange<String> slow = exchange(Safety.SAFE, RetryPolicy.DEFAULT.withMaxTotal(
        Duration.ofSeconds(5)));
    assertInstanceOf(Exchange.Fail.class,
        slow.answered(503, error("unavailable"), false, Duration.ofSeconds(60), 0));
    Exchange<String> late = exchange(Safety.SAFE, RetryPolicy.DEFAULT);
    assertInstanceOf(Exchange.Fail.class,
        late.answered(503, error("unavailable"), false, null, 30 * SECOND));
  }

  @Test
  void errorAnswersMapToTheirClassAndOddAnswersAreUnexpected() {
    TroupeClientException aborted = TroupeClientException.fromAnswer(409, Wire.parse(
        "{\"error\":\"aborted\",\"reason\":\"lock_conflict\",\"message\":\"busy\"}".getBytes()),
        null);
    assertInstanceOf(TroupeClientException.Aborted.class, aborted);
    assertEquals("lock_conflict", aborted.reason().orElseThrow());
    assertEquals("409 aborted (lock_conflict): busy", aborted.getMessage());
    assertFalse(aborted.retryable());
    assertInstanceOf(TroupeClientException.UnexpectedAnswer.class,
        TroupeClientException.fromAnswer(502, Wire.parse("<html>".getBytes()), null));
    assertInstanceOf(TroupeClientException.UnexpectedAnswer.class,
        TroupeClientException.fromAnswer(418, error("teapot"), null));
    // A success of an unexpected shape is no success.
    Call<Long> call = new Call<>("GET", "/x", java.util.List.of(), null, Calls.JSON, Safety.SAFE,
        (body, replayed) -> Wire.number(body, "txId"));
    assertInstanceOf(Exchange.Fail.class, new Exchange<>(call, RetryPolicy.DEFAULT, "k", 0)
        .answered(200, Wire.parse("{}".getBytes()), false, null, 0));
  }

  @Test
  void causalTokensMergePerDataCentre() {
    assertEquals("2:1", CausalTokens.merge(null, "2:1"));
    // An older answer arriving late never moves a data centre's timestamp back.
    assertEquals("1:500,3:9,7:10", CausalTokens.merge("1:500,7:10", "1:400,3:9"));
    assertEquals("garbage", CausalTokens.merge("2:1", "garbage"),
        "what the client cannot read, it takes");
    CausalTokens held = new CausalTokens(null);
    held.received("1:5");
    held.received("1:3");
    assertEquals("1:5", held.current().orElseThrow());
  }

  @Test
  void pathSegmentsAreEncodedWhole() {
    assertEquals("/v1/entities/T/a%20b%2Fc%3F%23%25", Calls.entityPath("T", "a b/c?#%"));
  }
}
