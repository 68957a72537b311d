package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The REST API end to end, against a real server process. */
public class RestEndToEndTest {
  public static final String ACCOUNT_YAML = """
      type: Account
      keys:
        balance: {kind: register, default: 0}
        status:  {kind: register, default: "new"}
        logins:  {kind: counter}
        tags:    {kind: set}
      actions:
        open:     {params: {initial: int}, pre: ["status == 'new'", "initial >= 0"],
                   effect: {status: "'open'", balance: "initial"}}
        withdraw: {params: {amount: int}, pre: ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                   effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["status == 'open'", "amount > 0"],
                   effect: {balance: "balance + amount"}}
      """;

  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
    Answer defined = server.send("PUT", "/v1/types/Account", ACCOUNT_YAML, "application/yaml");
    assertEquals(200, defined.status(), defined.text());
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  @Test
  void healthAnswers() throws Exception {
    Answer health = server.get("/v1/health");
    assertEquals(200, health.status());
    assertEquals("ok", health.body().get("status").asText());
  }

  @Test
  void schemalessEntitiesSupportEveryKeyOperation() throws Exception {
    Answer put = server.send("PUT", "/v1/entities/User/u1/keys/name", "\"Ada\"");
    assertEquals(200, put.status(), put.text());
    long firstVersion = put.body().get("version").asLong();
    assertTrue(firstVersion > 0);

    Answer patch = server.send("PATCH", "/v1/entities/User/u1", "{\"age\": 36, \"email\": \"a@x\"}");
    assertEquals(200, patch.status(), patch.text());
    long secondVersion = patch.body().get("version").asLong();
    assertTrue(secondVersion > firstVersion, "versions grow");

    Answer entity = server.get("/v1/entities/User/u1");
    assertEquals(200, entity.status());
    assertEquals("User", entity.body().get("type").asText());
    assertEquals("u1", entity.body().get("id").asText());
    assertEquals("Ada", entity.body().at("/state/name").asText());
    assertEquals(36, entity.body().at("/state/age").asLong());
    assertEquals(secondVersion, entity.body().get("version").asLong());

    assertEquals("a@x", server.get("/v1/entities/User/u1/keys/email").body().get("value").asText());
    assertEquals(200, server.send("DELETE", "/v1/entities/User/u1/keys/email", null).status());
    assertEquals(404, server.get("/v1/entities/User/u1/keys/email").status());

    // The older version stays readable.
    Answer old = server.get("/v1/entities/User/u1?at=" + firstVersion);
    assertEquals(200, old.status(), old.text());
    assertEquals("Ada", old.body().at("/state/name").asText());
    assertTrue(old.body().at("/state/age").isMissingNode(), "age was written later");

    assertEquals(200, server.send("DELETE", "/v1/entities/User/u1", null).status());
    Answer gone = server.get("/v1/entities/User/u1");
    assertEquals(404, gone.status());
    assertEquals("not_found", gone.errorCode());
  }

  @Test
  void typesAreListedAndShown() throws Exception {
    Answer types = server.get("/v1/types");
    assertEquals(200, types.status());
    assertTrue(types.text().contains("\"Account\""), types.text());
    Answer account = server.get("/v1/types/Account");
    assertEquals(200, account.status());
    assertEquals("counter", account.body().at("/keys/logins/kind").asText());
    assertEquals(404, server.get("/v1/types/Nope").status());
    assertEquals("unknown_type", server.get("/v1/types/Nope").errorCode());
  }

  @Test
  void actionsCheckPreconditionsAndApplyEffects() throws Exception {
    Answer opened = server.send("POST", "/v1/entities/Account/alice/actions/open", "{\"initial\": 100}");
    assertEquals(200, opened.status(), opened.text());
    assertEquals(100, opened.body().at("/state/balance").asLong());
    assertEquals("open", opened.body().at("/state/status").asText());

    Answer withdrawn = server.send("POST", "/v1/entities/Account/alice/actions/withdraw", "{\"amount\": 30}");
    assertEquals(70, withdrawn.body().at("/state/balance").asLong());

    Answer overdraft = server.send("POST", "/v1/entities/Account/alice/actions/withdraw", "{\"amount\": 500}");
    assertEquals(409, overdraft.status());
    assertEquals("precondition_failed", overdraft.errorCode());
    assertTrue(overdraft.body().get("message").asText().contains("balance - amount >= 0"),
        overdraft.text());
    assertEquals(70, server.get("/v1/entities/Account/alice").body().at("/state/balance").asLong());

    Answer reopen = server.send("POST", "/v1/entities/Account/alice/actions/open", "{\"initial\": 1}");
    assertEquals(409, reopen.status());

    Answer unknown = server.send("POST", "/v1/entities/Account/alice/actions/close", "{}");
    assertEquals(404, unknown.status());
    assertEquals("unknown_action", unknown.errorCode());
  }

  @Test
  void countersAndSetsBehaveAsCrdts() throws Exception {
    for (int i = 0; i < 5; i++) {
      assertEquals(200, server.send("POST", "/v1/entities/Account/bob/keys/logins/increment",
          "{\"by\": 2}").status());
    }
    assertEquals(200, server.send("POST", "/v1/entities/Account/bob/keys/logins/increment",
        "{\"by\": -3}").status());
    assertEquals(7, server.get("/v1/entities/Account/bob/keys/logins").body().get("value").asLong());

    server.send("POST", "/v1/entities/Account/bob/keys/tags/add", "{\"element\": \"vip\"}");
    server.send("POST", "/v1/entities/Account/bob/keys/tags/add", "{\"element\": \"new\"}");
    server.send("POST", "/v1/entities/Account/bob/keys/tags/remove", "{\"element\": \"new\"}");
    Answer tags = server.get("/v1/entities/Account/bob/keys/tags");
    assertEquals("[\"vip\"]", tags.body().get("value").toString());
    // Declared keys never written show their defaults.
    assertEquals("new", server.get("/v1/entities/Account/bob").body().at("/state/status").asText());
  }

  @Test
  void metricsExposeTheEngine() throws Exception {
    server.send("PUT", "/v1/entities/Metered/m1/keys/k", "1");
    Answer metrics = server.get("/metrics");
    assertEquals(200, metrics.status());
    for (String name : new String[] {"troupe_commits_total", "troupe_turn_latency_seconds_bucket",
        "troupe_cache_hits_total", "troupe_cache_misses_total",
        "troupe_journal_records_since_checkpoint", "troupe_checkpoint_age_seconds",
        "troupe_storage_table_file_bytes", "troupe_storage_blob_file_bytes",
        "troupe_storage_pending_compaction_bytes"}) {
      assertTrue(metrics.text().contains(name), name + " missing from /metrics");
    }
    long commits = Long.parseLong(metrics.text().lines()
        .filter(l -> l.startsWith("troupe_commits_total ")).findFirst().orElseThrow()
        .split(" ")[1]);
    assertTrue(commits >= 2, "at least the type definition and one write committed");
    // The write activated its entity's actor (the type definition may have activated one more).
    long activations = Long.parseLong(metrics.text().lines()
        .filter(l -> l.startsWith("troupe_entity_activations_total ")).findFirst().orElseThrow()
        .split(" ")[1]);
    assertTrue(activations >= 1, "the write's entity was activated: " + activations);
    assertTrue(metrics.text().contains("troupe_entity_passivations_total "),
        "passivations are counted");
    // Where the commits' time went on the storage writers: every write and group counted.
    long timedCommits = value(metrics, "troupe_storage_commit_seconds_count");
    assertTrue(timedCommits >= commits, timedCommits + " writes timed, " + commits + " committed");
    assertEquals(timedCommits, value(metrics, "troupe_storage_commit_wait_seconds_count"));
    long groups = Long.parseLong(metrics.text().lines()
        .filter(l -> l.startsWith("troupe_group_commits_total ")).findFirst().orElseThrow()
        .split(" ")[1]);
    assertTrue(value(metrics, "troupe_storage_journal_write_seconds_count") >= groups,
        "every synced group's write is timed");
    assertTrue(metrics.text().contains(
            "troupe_storage_maintenance_slice_seconds_bucket{kind=\"truncation\",le=\"0.005\"} "),
        "maintenance slices by kind, labels before le");
    server.send("PUT", "/v1/entities/Metered/m2/keys/k", "2");
    assertTrue(value(server.get("/metrics"), "troupe_storage_commit_seconds_count") > timedCommits,
        "the next write is timed too");
  }

  private static long value(Answer metrics, String series) {
    return Long.parseLong(metrics.text().lines()
        .filter(l -> l.startsWith(series + " ")).findFirst()
        .orElseThrow(() -> new AssertionError(series + " missing from /metrics"))
        .split(" ")[1]);
  }
}
