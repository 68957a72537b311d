package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Long polls of {@code /v1/replication/log} on a real named server: a pull that has everything is
 * held and answered as soon as the next commit is in the log; with nothing committed it is
 * answered after the wait with a heartbeat; a wait above {@code long-poll-max-millis} is capped.
 */
class ReplicationLongPollTest {
  private static final String SECRET = "replication-secret-0123456789";
  private static final long MAX_WAIT_MILLIS = 1_500;

  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.startLisbonWithUnreachableParis(data, SECRET,
        "troupe.replication.long-poll-max-millis=" + MAX_WAIT_MILLIS);
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  /** Pulls on a client of their own: a held pull must not hold up the test's other requests. */
  private static final java.net.http.HttpClient PULLS = java.net.http.HttpClient.newBuilder()
      .version(java.net.http.HttpClient.Version.HTTP_1_1).build();

  private static CompletableFuture<HttpResponse<byte[]>> pull(long after, long waitMillis) {
    return PULLS.sendAsync(HttpRequest.newBuilder(URI.create(server.baseUrl()
                + "/v1/replication/log?origin=lisbon&after=" + after + "&wait=" + waitMillis))
            .header("Authorization", "Bearer " + SECRET)
            .header("Troupe-Dc", "paris")
            .header("Troupe-Received-Vector", "")
            .timeout(Duration.ofSeconds(30)).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
  }

  private static ReplicationBatch batch(HttpResponse<byte[]> response) {
    assertEquals(200, response.statusCode(), new String(response.body()));
    return ReplicationCodec.decodeBatch(response.body());
  }

  /** Everything written so far: the bound a pull after it finds nothing beyond. */
  private static long upToNow() throws Exception {
    return batch(pull(0, 0).get()).upToTimestamp();
  }

  @Test
  void aHeldPullIsAnsweredByTheNextCommit() throws Exception {
    long after = upToNow();
    CompletableFuture<HttpResponse<byte[]>> held = pull(after, MAX_WAIT_MILLIS);
    Thread.sleep(300);
    assertTrue(!held.isDone(), "a pull with nothing new is held");
    assertEquals(200, server.send("PUT", "/v1/entities/Note/held/keys/text", "\"x\"").status());
    long written = System.nanoTime();
    ReplicationBatch batch = batch(held.get());
    long answeredMillis = (System.nanoTime() - written) / 1_000_000;
    assertTrue(!batch.entries().isEmpty(), "the commit's entries: " + batch);
    // The hold would have ended about 1200 ms after the write began.
    assertTrue(answeredMillis < 800, "answered by the commit, not the wait: " + answeredMillis
        + " ms after it");
  }

  @Test
  void anIdleHoldEndsWithAHeartbeatAndIsCapped() throws Exception {
    long after = upToNow();
    long start = System.nanoTime();
    // Asks for longer than the server's maximum: held for the maximum.
    ReplicationBatch batch = batch(pull(after, 60_000).get());
    long heldMillis = (System.nanoTime() - start) / 1_000_000;
    assertTrue(batch.entries().isEmpty(), "nothing was written: " + batch);
    assertTrue(batch.upToTimestamp() >= after, "a heartbeat: " + batch);
    assertTrue(heldMillis >= MAX_WAIT_MILLIS - 50 && heldMillis < 20_000,
        "held for about the maximum: " + heldMillis + " ms");
  }
}
