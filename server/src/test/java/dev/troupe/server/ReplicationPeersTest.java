package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.server.http.Authorization;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Peers changed on a running named server ({@code lisbon}, configured peer {@code paris}, which
 * is unreachable): {@code /v1/replication/peers} with its scopes, refusals (JSON, documented,
 * nothing changed), idempotent re-adds and URL changes, the record across a restart (the
 * configuration winning for a configured name), a runtime peer in status and metrics, the CLI;
 * and a pull below the log's truncation answered {@code 410 truncated}.
 */
class ReplicationPeersTest {
  private static final String SECRET = "replication-secret-0123456789";
  private static final String ADMIN = "troupe_admin_token";
  private static final String READER = "troupe_reader_token";
  private static final String WRITER = "troupe_writer_token";
  private static final String PEERS = "/v1/replication/peers";

  @TempDir Path data;
  private final List<String> problems = new ArrayList<>();

  private ServerProcess start(String... extra) throws Exception {
    List<String> settings = new ArrayList<>(List.of(
        "troupe.http.auth.tokens=[{name = admin, sha256 = \"" + Authorization.sha256Hex(ADMIN)
            + "\", scopes = [admin]}, {name = reader, sha256 = \""
            + Authorization.sha256Hex(READER) + "\", scopes = [read]}, {name = writer, sha256 = \""
            + Authorization.sha256Hex(WRITER) + "\", scopes = [read, write]}]"));
    settings.addAll(List.of(extra));
    return ServerProcess.startLisbonWithUnreachableParis(data, SECRET,
        settings.toArray(String[]::new));
  }

  private static Answer send(ServerProcess server, String method, String path, String body,
      String token) throws Exception {
    return ServerProcess.send(server.baseUrl() + path, method, body, "application/json",
        token == null ? Map.of() : Map.of("Authorization", "Bearer " + token),
        Duration.ofSeconds(30));
  }

  private Answer checked(OpenApiDocument document, ServerProcess server, String method,
      String template, String path, String body, String token) throws Exception {
    Answer answer = send(server, method, path, body, token);
    problems.addAll(document.problems(method, template, answer));
    return answer;
  }

  private static String peer(String name, String url) {
    return "{\"name\": \"" + name + "\", \"url\": \"" + url + "\"}";
  }

  private static List<String> names(Answer list) {
    List<String> names = new ArrayList<>();
    list.body().path("peers").forEach(peer -> names.add(peer.path("name").asText()
        + (peer.path("configured").asBoolean() ? "" : "*") + "@" + peer.path("url").asText()));
    return names;
  }

  @Test
  void peersAreAddedChangedRemovedAndRecordedAcrossARestart() throws Exception {
    OpenApiDocument document = OpenApiDocument.load();
    ServerProcess server = start();
    try {
      // Scopes: listing takes read, changing takes admin.
      assertEquals(401, send(server, "POST", PEERS, peer("tokyo", "http://127.0.0.1:9"), null)
          .status());
      assertEquals(403, send(server, "POST", PEERS, peer("tokyo", "http://127.0.0.1:9"), READER)
          .status());
      assertEquals(403, send(server, "DELETE", PEERS + "/paris", null, READER).status());
      Answer listed = checked(document, server, "GET", PEERS, PEERS, null, READER);
      assertEquals(200, listed.status(), listed.text());
      assertEquals(List.of("paris@http://127.0.0.1:9"), names(listed));

      // Refusals: JSON from the closed set, nothing changed.
      Map<String, String> refusedBodies = Map.of(
          "{\"name\": \"tokyo\"}", "invalid_request",
          "[1]", "invalid_request",
          "{not json", "invalid_request",
          "{\"name\": \"tokyo\", \"url\": \"http://x:1\", \"extra\": 1}", "invalid_request",
          peer("bad name!", "http://127.0.0.1:9"), "invalid_request",
          peer("lisbon", "http://127.0.0.1:9"), "invalid_request",
          peer("tokyo", "ftp://127.0.0.1:9"), "invalid_request",
          peer("tokyo", "http://127.0.0.1:9/path"), "invalid_request",
          peer("tokyo", "http://127.0.0.1"), "invalid_request");
      for (Map.Entry<String, String> refused : refusedBodies.entrySet()) {
        Answer answer = checked(document, server, "POST", PEERS, PEERS, refused.getKey(), ADMIN);
        assertEquals(400, answer.status(), refused.getKey() + ": " + answer.text());
        assertEquals(refused.getValue(), answer.errorCode(), answer.text());
      }
      Answer unknown = checked(document, server, "DELETE", PEERS + "/{name}", PEERS + "/tokyo",
          null, ADMIN);
      assertEquals(404, unknown.status(), unknown.text());
      assertEquals("not_found", unknown.errorCode());
      Answer wrongMethod = send(server, "PUT", PEERS, peer("tokyo", "http://127.0.0.1:9"), ADMIN);
      assertEquals(405, wrongMethod.status(), wrongMethod.text());
      assertEquals(List.of("paris@http://127.0.0.1:9"),
          names(send(server, "GET", PEERS, null, READER)), "a refusal changed nothing");

      // Added (201), again unchanged (200), moved (200).
      Answer added = checked(document, server, "POST", PEERS, PEERS,
          peer("tokyo", "http://127.0.0.1:9"), ADMIN);
      assertEquals(201, added.status(), added.text());
      assertEquals("added", added.body().path("change").asText());
      assertEquals(DataCentreIds.of("tokyo"), added.body().path("dataCentreId").asInt());
      Answer again = checked(document, server, "POST", PEERS, PEERS,
          peer("tokyo", "http://127.0.0.1:9/"), ADMIN);
      assertEquals(200, again.status(), again.text());
      assertEquals("unchanged", again.body().path("change").asText());
      Answer moved = checked(document, server, "POST", PEERS, PEERS,
          peer("tokyo", "http://127.0.0.1:7"), ADMIN);
      assertEquals(200, moved.status(), moved.text());
      assertEquals("updated", moved.body().path("change").asText());
      // A configured peer moved at runtime, and one added then removed.
      assertEquals(200, send(server, "POST", PEERS, peer("paris", "http://127.0.0.1:8"), ADMIN)
          .status());
      assertEquals(201, send(server, "POST", PEERS, peer("oslo", "http://127.0.0.1:9"), ADMIN)
          .status());
      Answer removed = checked(document, server, "DELETE", PEERS + "/{name}", PEERS + "/oslo",
          null, ADMIN);
      assertEquals(200, removed.status(), removed.text());
      assertFalse(removed.body().path("configured").asBoolean());
      assertEquals(List.of("paris@http://127.0.0.1:8", "tokyo*@http://127.0.0.1:7"),
          names(send(server, "GET", PEERS, null, READER)));

      // A runtime peer is listed by the status, the metrics and the CLI like a configured one.
      JsonNode status = send(server, "GET", "/v1/replication/status", null, READER).body();
      List<String> statusPeers = new ArrayList<>();
      status.path("peers").forEach(peer -> statusPeers.add(peer.path("name").asText()));
      assertEquals(List.of("paris", "tokyo"), statusPeers, status.toString());
      assertEquals("http://127.0.0.1:7", status.path("peers").get(1).path("url").asText());
      assertTrue(status.path("peers").get(1).has("link"), status.toString());
      String metrics = send(server, "GET", "/metrics", null, READER).text();
      assertTrue(metrics.contains("tokyo"), metrics);
      ServerProcess.Finished cli = ServerProcess.run(List.of("peer", "list", "--url",
          server.baseUrl(), "--token", READER));
      assertEquals(0, cli.exitStatus(), cli.output());
      assertTrue(cli.output().contains("tokyo") && cli.output().contains("added at runtime"),
          cli.output());
      ServerProcess.Finished cliAdd = ServerProcess.run(List.of("peer", "add",
          "oslo=http://127.0.0.1:9", "--url", server.baseUrl(), "--token", ADMIN));
      assertEquals(0, cliAdd.exitStatus(), cliAdd.output());
      ServerProcess.Finished cliRemove = ServerProcess.run(List.of("peer", "remove", "oslo",
          "--url", server.baseUrl(), "--token", ADMIN));
      assertEquals(0, cliRemove.exitStatus(), cliRemove.output());
      ServerProcess.Finished cliRefused = ServerProcess.run(List.of("peer", "remove", "oslo",
          "--url", server.baseUrl(), "--token", ADMIN));
      assertEquals(1, cliRefused.exitStatus(), cliRefused.output());
      assertTrue(cliRefused.output().contains("not_found"), cliRefused.output());

      // Removing a configured peer lasts until a restart with the same configuration.
      assertEquals(200, send(server, "DELETE", PEERS + "/paris", null, ADMIN).status());
      assertEquals(List.of("tokyo*@http://127.0.0.1:7"),
          names(send(server, "GET", PEERS, null, READER)));
    } finally {
      server.close();
    }
    ServerProcess restarted = start();
    try {
      assertEquals(List.of("paris@http://127.0.0.1:9", "tokyo*@http://127.0.0.1:7"),
          names(send(restarted, "GET", PEERS, null, READER)),
          "the added peer is kept; the configured one comes back, at its configured URL");
    } finally {
      restarted.close();
    }
    assertEquals(List.of(), problems);
  }

  @Test
  void aPullBelowTheLogsTruncationIsAnswered410Truncated() throws Exception {
    OpenApiDocument document = OpenApiDocument.load();
    ServerProcess server = start("troupe.replication.truncate-interval-millis=50",
        "troupe.replication.tick-interval-millis=20");
    try {
      for (int i = 0; i < 3; i++) {
        Answer written = send(server, "PUT", "/v1/entities/User/u" + i + "/keys/a", "1", WRITER);
        assertEquals(200, written.status(), written.text());
      }
      // Act as paris: pull everything, then report it received, so the stable vector passes it.
      ReplicationBatch batch = pull(server, 0, "");
      assertEquals(3, batch.entries().size(), batch.toString());
      String received = DataCentreIds.of("lisbon") + ":" + batch.upToTimestamp();
      // Truncation may take the entries in several steps (each bounded by what delivery and
      // the applied vector's record allow then): wait until all three are gone.
      long last = batch.entries().getLast().timestamp();
      long deadline = System.nanoTime() + 60_000_000_000L;
      HttpResponse<byte[]> answer;
      Answer refused = null;
      do {
        Thread.sleep(100);
        answer = rawPull(server, 0, received);
        if (answer.statusCode() != 200) {
          refused = new Answer(answer.statusCode(), Json.parse(answer.body()),
              new String(answer.body()), answer.headers());
        }
      } while ((refused == null || refused.body().path("truncatedThrough").asLong() < last)
          && System.nanoTime() < deadline);
      if (refused == null) {
        System.out.println("ReplicationPeersTest: never truncated; the server's log:\n"
            + server.log());
      }
      assertTrue(refused != null, "no pull was refused within 60 s");
      assertEquals(410, refused.status(), refused.text());
      assertEquals("truncated", refused.errorCode());
      long through = refused.body().path("truncatedThrough").asLong();
      assertEquals(batch.entries().getLast().timestamp(), through, refused.text());
      assertEquals(through + 1, refused.body().path("lowestHeldTimestamp").asLong());
      assertEquals(DataCentreIds.of("lisbon"), refused.body().path("origin").asInt());
      problems.addAll(document.problems("GET", "/v1/replication/log", refused));
      // From the bound on, pulls are answered (nothing was lost after it).
      assertEquals(200, rawPull(server, through, received).statusCode());
    } finally {
      server.close();
    }
    assertEquals(List.of(), problems);
  }

  private static HttpResponse<byte[]> rawPull(ServerProcess server, long after, String received)
      throws Exception {
    return ServerProcess.client().send(HttpRequest.newBuilder(URI.create(server.baseUrl()
            + "/v1/replication/log?origin=lisbon&after=" + after))
        .header("Authorization", "Bearer " + SECRET)
        .header("Troupe-Dc", "paris")
        .header("Troupe-Received-Vector", received)
        .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  private static ReplicationBatch pull(ServerProcess server, long after, String received)
      throws Exception {
    HttpResponse<byte[]> answer = rawPull(server, after, received);
    assertEquals(200, answer.statusCode(), new String(answer.body()));
    return ReplicationCodec.decodeBatch(answer.body());
  }
}
