package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.server.replication.VectorText;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP side of replication on a real named server ({@code lisbon}, whose one peer {@code
 * paris} is unreachable): the log endpoint's authentication and parameter refusals (JSON, as
 * documented, nothing recorded), a pull of what was written, the causal token on every answer and
 * {@code not_yet_visible}, the status, metrics and {@code troupe status}; and the settings a node
 * refuses to start with.
 */
class ReplicationEndpointTest {
  private static final String SECRET = "replication-secret-0123456789";
  private static final String LOG = "/v1/replication/log";
  private static final int LISBON = DataCentreIds.of("lisbon");
  private static final int PARIS = DataCentreIds.of("paris");

  @TempDir static Path data;
  static ServerProcess server;
  static OpenApiDocument document;
  private final List<String> problems = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    document = OpenApiDocument.load();
    server = ServerProcess.startLisbonWithUnreachableParis(data, SECRET,
        "troupe.replication.token-wait-max-millis=300");
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  /** A request with {@code headers} (name, value, name, value...). */
  private static Answer request(String method, String path, String body, String... headers)
      throws Exception {
    Map<String, String> named = new LinkedHashMap<>();
    for (int i = 0; i < headers.length; i += 2) {
      named.put(headers[i], headers[i + 1]);
    }
    return ServerProcess.send(server.baseUrl() + path, method, body, "application/json", named,
        Duration.ofSeconds(30));
  }

  private static HttpResponse<byte[]> pull(String query, String received) throws Exception {
    return ServerProcess.client().send(HttpRequest.newBuilder(
            URI.create(server.baseUrl() + LOG + query))
        .header("Authorization", "Bearer " + SECRET)
        .header("Troupe-Dc", "paris")
        .header("Troupe-Received-Vector", received)
        .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  /** A refused pull: the status, the code, a documented JSON answer. */
  private void refused(int status, String code, String query, String... headers) throws Exception {
    Answer answer = request("GET", LOG + query, null, headers);
    assertEquals(status, answer.status(), query + " " + List.of(headers) + ": " + answer.text());
    assertEquals(code, answer.errorCode(), answer.text());
    problems.addAll(document.problems("GET", LOG, answer));
  }

  @Test
  void pullsAreAuthenticatedAndCheckedBeforeAnythingIsRecorded() throws Exception {
    JsonNode stableBefore = status().path("stableVector");
    String query = "?origin=lisbon&after=0";
    String auth = "Bearer " + SECRET;
    refused(401, "unauthorized", query, "Troupe-Dc", "paris", "Troupe-Received-Vector", "");
    refused(401, "unauthorized", query, "Authorization", "Bearer " + SECRET + "x",
        "Troupe-Dc", "paris", "Troupe-Received-Vector", "");
    refused(401, "unauthorized", query, "Authorization", SECRET, "Troupe-Dc", "paris");
    String huge = LISBON + ":9000000000000000000";
    refused(400, "invalid_request", query, "Authorization", auth,
        "Troupe-Received-Vector", huge);
    refused(400, "invalid_request", query, "Authorization", auth, "Troupe-Dc", "not a name",
        "Troupe-Received-Vector", huge);
    refused(403, "forbidden", query, "Authorization", auth, "Troupe-Dc", "oslo",
        "Troupe-Received-Vector", huge);
    refused(400, "invalid_request", query, "Authorization", auth, "Troupe-Dc", "paris");
    refused(400, "invalid_request", query, "Authorization", auth, "Troupe-Dc", "paris",
        "Troupe-Received-Vector", "lisbon:1");
    for (String bad : new String[] {"?after=0", "?origin=rome&after=0", "?origin=lisbon",
        "?origin=lisbon&after=-1", "?origin=lisbon&after=soon", "?origin=lisbon&after=0&limit=0",
        "?origin=lisbon&after=0&limit=many", "?origin=lisbon&after=0&from=1",
        "?origin=lisbon&after=99999999999999999999"}) {
      refused(400, "invalid_request", bad, "Authorization", auth, "Troupe-Dc", "paris",
          "Troupe-Received-Vector", huge);
    }
    Answer post = request("POST", LOG + query, "{}", "Authorization", auth, "Troupe-Dc",
        "paris", "Troupe-Received-Vector", huge);
    assertEquals(405, post.status(), post.text());
    // A client token is no replication secret, and the secret is no client token: this server
    // has no client tokens, so its client routes are open, and the log still is not.
    assertEquals(List.of(), problems, "answers outside the document");
    // None of the refused pulls reported paris's received vector.
    assertEquals(stableBefore, status().path("stableVector"));
  }

  @Test
  void aPullServesWhatWasWritten() throws Exception {
    Answer written = request("PUT", "/v1/entities/Note/pulled/keys/text", "\"hello\"");
    assertEquals(200, written.status(), written.text());
    long version = written.body().path("version").asLong();
    List<ReplicationEntry> entries = new ArrayList<>();
    long after = 0;
    for (int round = 0; round < 50; round++) {
      HttpResponse<byte[]> response = pull("?origin=lisbon&after=" + after + "&limit=1", "");
      assertEquals(200, response.statusCode(), new String(response.body()));
      assertEquals("application/octet-stream",
          response.headers().firstValue("Content-Type").orElse(""));
      ReplicationBatch batch = ReplicationCodec.decodeBatch(response.body());
      assertEquals(LISBON, batch.originDc());
      assertTrue(batch.entries().size() <= 1 || batch.entries().stream()
          .map(ReplicationEntry::timestamp).distinct().count() == 1, "limit 1: one timestamp");
      entries.addAll(batch.entries());
      if (batch.upToTimestamp() >= version) {
        break;
      }
      after = batch.upToTimestamp();
      Thread.sleep(50);
    }
    assertTrue(entries.stream().anyMatch(entry -> entry instanceof ReplicationEntry.Part part
            && part.entity().equals(new EntityId("Note", "pulled")) && part.timestamp() == version),
        "the write's part: " + entries);
    // The origin by id, and the peer's own entries (none here).
    HttpResponse<byte[]> byId = pull("?origin=" + LISBON + "&after=" + version, "");
    assertEquals(200, byId.statusCode());
    HttpResponse<byte[]> paris = pull("?origin=paris&after=0", "");
    assertEquals(PARIS, ReplicationCodec.decodeBatch(paris.body()).originDc());
    Answer documented = new Answer(byId.statusCode(), Json.NODES.nullNode(), "",
        byId.headers());
    assertEquals(List.of(), document.problems("GET", LOG, documented));
  }

  @Test
  void everyAnswerCarriesTheTokenAndATokenIsWaitedFor() throws Exception {
    Answer written = request("PUT", "/v1/entities/Note/token/keys/text", "\"one\"");
    assertEquals(200, written.status(), written.text());
    String header = written.header("Troupe-Causal-Token").orElseThrow();
    DependencyVector token = VectorText.parse(header, "token");
    assertTrue(token.get(LISBON) >= written.body().path("version").asLong(), header);

    // The token of this DC is visible here at once, and comes back no smaller.
    Answer read = request("GET", "/v1/entities/Note/token", null, "Troupe-Causal-Token", header);
    assertEquals(200, read.status(), read.text());
    assertTrue(VectorText.parse(read.header("Troupe-Causal-Token").orElseThrow(), "t")
        .covers(token));
    // Errors carry it too.
    assertTrue(request("GET", "/v1/entities/Note/none", null).header("Troupe-Causal-Token")
        .isPresent());

    // A token naming a write of paris this DC has not seen: nothing is done, 503.
    String unseen = VectorText.encode(token.atLeast(PARIS, 7_000_000_000_000_000_000L));
    Answer waited = request("PUT", "/v1/entities/Note/token/keys/text", "\"two\"",
        "Troupe-Causal-Token", unseen);
    assertEquals(503, waited.status(), waited.text());
    assertEquals("not_yet_visible", waited.errorCode());
    assertTrue(waited.header("Retry-After").isPresent());
    assertTrue(VectorText.parse(waited.header("Troupe-Causal-Token").orElseThrow(), "t")
        .covers(VectorText.parse(unseen, "t")), "a client's token never goes back");
    problems.addAll(document.problems("PUT", "/v1/entities/{type}/{id}/keys/{key}", waited));
    assertEquals("one", request("GET", "/v1/entities/Note/token/keys/text", null).body()
        .path("value").asText(), "the refused write changed nothing");
    // Health and metrics never wait.
    assertEquals(200, request("GET", "/v1/health/ready", null, "Troupe-Causal-Token", unseen)
        .status());
    assertEquals(200, request("GET", "/metrics", null, "Troupe-Causal-Token", unseen).status());

    // Malformed tokens and tokens of another deployment are refused.
    int high = Math.max(LISBON, PARIS);
    int low = Math.min(LISBON, PARIS);
    for (String bad : new String[] {"x", LISBON + ":-1", high + ":1," + low + ":1",
        "5:1", low + ":1, " + high + ":1"}) {
      Answer refused = request("GET", "/v1/entities/Note/token", null, "Troupe-Causal-Token", bad);
      assertEquals(400, refused.status(), bad + ": " + refused.text());
      assertEquals("invalid_request", refused.errorCode());
      problems.addAll(document.problems("GET", "/v1/entities/{type}/{id}", refused));
    }
    assertEquals(List.of(), problems, "answers outside the document");
  }

  private static JsonNode status() throws Exception {
    Answer status = server.get("/v1/replication/status");
    assertEquals(200, status.status(), status.text());
    return status.body();
  }

  @Test
  void statusMetricsAndTheStatusCommand() throws Exception {
    // paris is unreachable: its pulls fail.
    JsonNode status = status();
    for (int i = 0; i < 100 && status.at("/peers/0/link/failures").asLong() == 0; i++) {
      Thread.sleep(100);
      status = status();
    }
    assertEquals("lisbon", status.path("dataCentre").asText());
    assertEquals(LISBON, status.path("dataCentreId").asInt());
    assertEquals("paris", status.at("/peers/0/name").asText());
    assertEquals("http://127.0.0.1:9", status.at("/peers/0/url").asText());
    assertTrue(status.at("/peers/0/link/failures").asLong() > 0, status.toString());
    assertEquals(false, status.at("/peers/0/link/up").asBoolean());
    Answer answer = server.get("/v1/replication/status");
    assertEquals(List.of(), document.problems("GET", "/v1/replication/status", answer));

    String metrics = server.get("/metrics").text();
    for (String line : List.of("troupe_replication_lag_transactions{peer=\"paris\"} ",
        "troupe_replication_lag_millis{peer=\"paris\"} ",
        "troupe_replication_stable_vector_age_millis ",
        "troupe_replication_pending_transactions ",
        "troupe_replication_pulls_total{peer=\"paris\"} ",
        "troupe_replication_pull_failures_total{peer=\"paris\"} ")) {
      assertTrue(metrics.contains("\n" + line), line + " in\n" + metrics);
    }

    ServerProcess.Finished shown = ServerProcess.run(List.of("status", "--url", server.baseUrl()));
    assertEquals(0, shown.exitStatus(), shown.output());
    assertTrue(shown.output().contains("data centre lisbon"), shown.output());
    assertTrue(shown.output().lines().anyMatch(line -> line.startsWith("paris")
        && line.contains("http://127.0.0.1:9") && line.contains("down")), shown.output());
  }

  @Test
  void aNodeWithoutANameSendsNoTokenAndTakesAnyWellFormedOne() throws Exception {
    try (ServerProcess unnamed = ServerProcess.start(data.resolve("unnamed"))) {
      Answer answer = unnamed.send("PUT", "/v1/entities/Note/n/keys/text", "\"x\"");
      assertEquals(200, answer.status(), answer.text());
      assertTrue(answer.header("Troupe-Causal-Token").isEmpty());
      HttpResponse<String> withToken = ServerProcess.client().send(HttpRequest.newBuilder(
              URI.create(unnamed.baseUrl() + "/v1/entities/Note/n"))
          .header("Troupe-Causal-Token", PARIS + ":7000000000000000000").GET().build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, withToken.statusCode(), withToken.body());
      HttpResponse<String> malformed = ServerProcess.client().send(HttpRequest.newBuilder(
              URI.create(unnamed.baseUrl() + "/v1/entities/Note/n"))
          .header("Troupe-Causal-Token", "x").GET().build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(400, malformed.statusCode(), malformed.body());
      assertEquals(404, unnamed.get("/v1/replication/status").status());
    }
  }

  @Test
  void badDataCentreSettingsAreRefusedBeforeTheStoreOpens() throws Exception {
    Path directory = data.resolve("refused");
    Map<List<String>, String> refusals = Map.of(
        List.of("--dc", "a", "--peer", "b=http://127.0.0.1:1"), "no replication secret",
        List.of("--dc", "a", "--peer", "b"), "expected NAME=URL",
        List.of("--dc", "a", "--peer", "a=http://127.0.0.1:1", "--set",
            "troupe.replication.allow-unauthenticated=true"), "own name");
    for (Map.Entry<List<String>, String> refusal : refusals.entrySet()) {
      List<String> arguments = new ArrayList<>(List.of("serve", "--data", directory.toString(),
          "--port", "0"));
      arguments.addAll(refusal.getKey());
      ServerProcess.Finished finished = ServerProcess.run(arguments);
      assertEquals(78, finished.exitStatus(), finished.output());
      assertTrue(finished.output().contains(refusal.getValue()), finished.output());
    }
    assertTrue(!Files.exists(directory) || Files.list(directory).findAny().isEmpty(),
        "nothing was opened");
  }
}
