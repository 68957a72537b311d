package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.Frames;
import dev.troupe.server.replication.FrameSplitter;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replication streams ({@code GET /v1/replication/stream}) on a real named server: the stream
 * starts with what the log holds, carries heartbeats while idle, carries a commit soon after it
 * is in the log, and ends after {@code stream-max-millis}; a stream is refused like a pull
 * (secret, peer, parameters) before anything is sent.
 */
class ReplicationStreamTest {
  private static final String SECRET = "replication-secret-0123456789";
  private static final long HEARTBEAT_MILLIS = 200;
  private static final long STREAM_MAX_MILLIS = 3_000;

  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.startLisbonWithUnreachableParis(data, SECRET,
        "troupe.replication.stream-heartbeat-millis=" + HEARTBEAT_MILLIS,
        "troupe.replication.stream-max-millis=" + STREAM_MAX_MILLIS);
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  /** Streams on a client of their own: an open stream must not hold up other requests. */
  private static final HttpClient STREAMS =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private static HttpResponse<InputStream> open(String query, String... headers)
      throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create(server.baseUrl() + "/v1/replication/stream" + query))
        .timeout(Duration.ofSeconds(30)).GET();
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return STREAMS.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
  }

  private static HttpResponse<InputStream> open(long after) throws Exception {
    return open("?origin=lisbon&after=" + after, "Authorization", "Bearer " + SECRET,
        "Troupe-Dc", "paris", "Troupe-Received-Vector", "");
  }

  /** The next batch of the stream; empty at its end (cut inside a frame: a failure). */
  private static Optional<ReplicationBatch> next(InputStream in) throws IOException {
    byte[] header = in.readNBytes(Frames.HEADER_BYTES);
    if (header.length == 0) {
      return Optional.empty();
    }
    assertEquals(Frames.HEADER_BYTES, header.length, "the stream ended inside a header");
    int fields = BinaryReader.intAt(header, 2);
    byte[] rest = in.readNBytes(fields + Frames.CHECKSUM_BYTES);
    assertEquals(fields + Frames.CHECKSUM_BYTES, rest.length, "the stream ended in a frame");
    byte[] frame = Arrays.copyOf(header, header.length + rest.length);
    System.arraycopy(rest, 0, frame, header.length, rest.length);
    // The splitter the puller uses agrees on the frame.
    assertEquals(1, new FrameSplitter(1 << 20).offer(frame).size());
    return Optional.of(ReplicationCodec.decodeBatch(frame));
  }

  @Test
  void aStreamCarriesTheLogHeartbeatsAndCommitsThenEnds() throws Exception {
    assertEquals(200, server.send("PUT", "/v1/entities/Note/before/keys/text", "\"a\"")
        .status());
    long opened = System.nanoTime();
    HttpResponse<InputStream> response = open(0);
    assertEquals(200, response.statusCode());
    try (InputStream in = response.body()) {
      // What the log held: the write before the stream.
      ReplicationBatch first = next(in).orElseThrow();
      assertTrue(!first.entries().isEmpty(), "the log's entries first: " + first);
      long bound = first.upToTimestamp();
      // Idle: heartbeats, each with a bound at least the last.
      for (int i = 0; i < 3; i++) {
        ReplicationBatch heartbeat = next(in).orElseThrow();
        assertTrue(heartbeat.entries().isEmpty(), "nothing written: " + heartbeat);
        assertTrue(heartbeat.upToTimestamp() >= bound, "bounds never go back: " + heartbeat);
        bound = heartbeat.upToTimestamp();
      }
      // A commit comes by the stream, well before the stream would end anyway.
      assertEquals(200, server.send("PUT", "/v1/entities/Note/during/keys/text", "\"b\"")
          .status());
      long written = System.nanoTime();
      ReplicationBatch carrying;
      do {
        carrying = next(in).orElseThrow();
        assertTrue(carrying.upToTimestamp() >= bound, "bounds never go back: " + carrying);
        bound = carrying.upToTimestamp();
      } while (carrying.entries().isEmpty());
      long carriedMillis = (System.nanoTime() - written) / 1_000_000;
      assertTrue(carrying.entries().stream().allMatch(entry -> entry.timestamp() > 0));
      assertTrue(carriedMillis < 1_500, "the commit came " + carriedMillis + " ms after it");
      // Then the stream ends after stream-max-millis, whole (no frame cut).
      while (next(in).isPresent()) {
        // heartbeats
      }
      long lastedMillis = (System.nanoTime() - opened) / 1_000_000;
      assertTrue(lastedMillis >= STREAM_MAX_MILLIS - 100 && lastedMillis < 20_000,
          "the stream lasted " + lastedMillis + " ms");
    }
  }

  @Test
  void aStreamIsRefusedLikeAPull() throws Exception {
    assertEquals(401, open("?origin=lisbon&after=0", "Troupe-Dc", "paris",
        "Troupe-Received-Vector", "").statusCode());
    assertEquals(403, open("?origin=lisbon&after=0", "Authorization", "Bearer " + SECRET,
        "Troupe-Dc", "madrid", "Troupe-Received-Vector", "").statusCode());
    for (String query : new String[] {"?origin=lisbon&after=0&limit=5", "?origin=lisbon",
        "?origin=nowhere&after=0", "?origin=lisbon&after=-1"}) {
      HttpResponse<InputStream> refused = open(query, "Authorization", "Bearer " + SECRET,
          "Troupe-Dc", "paris", "Troupe-Received-Vector", "");
      try (InputStream in = refused.body()) {
        String body = new String(in.readAllBytes());
        assertEquals(400, refused.statusCode(), query + ": " + body);
        assertTrue(body.contains("invalid_request"), body);
      }
    }
  }
}
