package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.http.Authorization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The web console ({@code /console}) in a real headless browser: Debian's chromium, installed by
 * {@code src/test/console/install-chromium.sh} when missing (never skipped: a browser that cannot
 * be installed fails the test), driven over the DevTools protocol ({@link DevToolsBrowser}).
 *
 * <p>Against a real server that requires bearer tokens and is a named data centre, holding real
 * data: a declared type, entities with several versions, a committed and an aborted transaction
 * and a dependency. The page first asks for the token (the API answered 401; the console's own
 * files needed none); once it is given, every page is opened and must show the data it was given,
 * with no uncaught exception, console error, failed request or error answer. A screenshot of each
 * page is kept in {@code target/console/}.
 */
class ConsoleBrowserTest {
  private static final Path SCREENSHOTS = Path.of("target/console");
  private static final Duration PAGE_TIMEOUT = Duration.ofSeconds(15);
  private static final String TOKEN = UUID.randomUUID().toString();
  private static final String MIRROR_DEPENDENCY =
      "{\"leader\": {\"entity\": \"Account/alice\", \"key\": \"balance\"}, \"follower\":"
          + " {\"entity\": \"Mirror/alice\", \"key\": \"balance\"}, \"kind\": \"update\","
          + " \"function\": \"replicate\"}";

  @TempDir static Path data;
  static ServerProcess server;
  static String chromium;
  static long committedTransaction;

  @BeforeAll
  static void start() throws Exception {
    chromium = DevToolsBrowser.installedChromium();
    server = ServerProcess.start(data.resolve("node"), "troupe.dc.name=console",
        "troupe.http.auth.tokens=[{name = console, sha256 = \""
            + Authorization.sha256Hex(TOKEN) + "\", scopes = [read, write, admin]}]");
    ok(send("PUT", "/v1/types/Account", RestEndToEndTest.ACCOUNT_YAML, "application/yaml"));
    ok(send("POST", "/v1/entities/Account/alice/actions/open", "{\"initial\": 100}", null));
    ok(send("POST", "/v1/entities/Account/alice/actions/deposit", "{\"amount\": 20}", null));
    ok(send("POST", "/v1/entities/Account/alice/actions/withdraw", "{\"amount\": 50}", null));
    ok(send("POST", "/v1/entities/Account/bob/actions/open", "{\"initial\": 10}", null));
    JsonNode committed = ok(send("POST", "/v1/transactions", "{\"ops\": ["
        + "{\"entity\": \"Account/alice\", \"action\": \"withdraw\", \"args\": {\"amount\": 5}},"
        + "{\"entity\": \"Account/bob\", \"action\": \"deposit\", \"args\": {\"amount\": 5}}]}",
        null));
    committedTransaction = committed.path("txId").asLong();
    ServerProcess.Answer aborted = send("POST", "/v1/transactions", "{\"ops\": ["
        + "{\"entity\": \"Account/bob\", \"action\": \"withdraw\", \"args\": {\"amount\": 1000}},"
        + "{\"entity\": \"Account/alice\", \"action\": \"deposit\", \"args\": {\"amount\": 1000}}]}",
        null);
    assertEquals(409, aborted.status(), aborted.text());
    ok(send("POST", "/v1/dependencies", MIRROR_DEPENDENCY, null));
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  private static ServerProcess.Answer send(String method, String path, String body,
      String contentType) throws Exception {
    return ServerProcess.send(server.baseUrl() + path, method, body,
        contentType == null ? "application/json" : contentType,
        Map.of("Authorization", "Bearer " + TOKEN), Duration.ofSeconds(30));
  }

  private static JsonNode ok(ServerProcess.Answer answer) {
    assertTrue(answer.status() / 100 == 2, answer.status() + " " + answer.text());
    return answer.body();
  }

  @Test
  void everyPageShowsTheServersDataWithoutErrors() throws Exception {
    String console = server.baseUrl() + "/console";
    try (DevToolsBrowser browser = DevToolsBrowser.start(chromium, 1280, 860)) {
      // Without a token: the page loads (its files are public), its API calls get 401 and the
      // token prompt shows.
      browser.navigate(console + "#/types");
      browser.await("!document.getElementById('token-form').hidden", PAGE_TIMEOUT,
          "the token prompt");
      List<String> answers = browser.answersSeen();
      assertTrue(answers.stream().anyMatch(seen -> seen.startsWith("200 ") && seen.endsWith(
          "/console/app.js")), "the console's files are served without a token: " + answers);
      assertTrue(answers.stream().anyMatch(seen -> seen.startsWith("401 ")),
          "the API refuses the console's calls without a token: " + answers);
      browser.screenshot(SCREENSHOTS.resolve("0-token-prompt.png"));
      browser.clearProblems();

      browser.evaluate("document.getElementById('token').value = " + quoted(TOKEN)
          + "; document.getElementById('token-form').requestSubmit()");
      show(browser, null, "types");
      String types = text(browser);
      assertTrue(types.contains("Account") && types.contains("balance")
          && types.contains("withdraw"), types);
      assertEquals(TOKEN, browser.evaluate("sessionStorage.getItem('troupe-console-token')")
          .asText(), "the token is kept for the tab");
      browser.screenshot(SCREENSHOTS.resolve("1-types.png"));

      show(browser, "#/entities/Account", "entities");
      assertEquals(List.of("alice", "bob"), strings(browser.evaluate(
          "[...document.querySelectorAll('#entity-list tbody tr')].map(r => r.dataset.id)")));
      browser.screenshot(SCREENSHOTS.resolve("2-entities.png"));

      show(browser, "#/entity/Account/alice?key=balance", "entity");
      // open 100, deposit 20, withdraw 50, the transaction's withdraw 5, the dependency's
      // registration (the leader records it): five versions, each read with ?at=.
      assertEquals(List.of("100", "120", "70", "65", "65"), strings(browser.evaluate(
          "[...document.querySelectorAll('#history-table tbody tr td:nth-child(2)')]"
              + ".map(c => c.textContent)")));
      // Versions are beyond JavaScript's exact integers (2^53): the page keeps them exact.
      List<String> versions = new ArrayList<>();
      ok(send("GET", "/v1/entities/Account/alice/versions", null, null)).path("versions")
          .forEach(version -> versions.add(0, version.asText()));
      assertEquals(versions, strings(browser.evaluate(
          "[...document.querySelectorAll('#history-table tbody tr td:nth-child(1)')]"
              + ".map(c => c.textContent)")));
      assertEquals(1, browser.evaluate("document.querySelectorAll('#history svg path.line')"
          + ".length").asInt(), "the history of a numeric key is charted");
      assertTrue(text(browser).contains("\"balance\": 65"), text(browser));
      browser.screenshot(SCREENSHOTS.resolve("3-entity.png"));

      show(browser, "#/dependencies/Account/alice", "dependencies");
      String graph = browser.evaluate(
          "document.querySelector('#dependency-graph svg').textContent").asText();
      assertTrue(graph.contains("Mirror/alice.balance") && graph.contains("Account/alice"),
          graph);
      browser.screenshot(SCREENSHOTS.resolve("4-dependencies.png"));

      show(browser, "#/transactions", "transactions");
      JsonNode rows = browser.evaluate("[...document.querySelectorAll('#transactions tbody tr')]"
          + ".map(r => ({tx: r.dataset.tx, outcome: r.dataset.outcome, text: r.textContent}))");
      assertTrue(contains(rows, String.valueOf(committedTransaction), "committed", "Account/bob"),
          rows.toString());
      assertTrue(contains(rows, null, "aborted", "precondition_failed"), rows.toString());
      browser.screenshot(SCREENSHOTS.resolve("5-transactions.png"));

      show(browser, "#/metrics", "metrics");
      // A rate needs two samples, a line two rates: the third sample comes two intervals (1 s
      // each) after the first.
      browser.await("document.querySelectorAll("
          + "'[data-metric=troupe_http_requests_total] circle.dot').length >= 2", PAGE_TIMEOUT,
          "the requests chart's line");
      assertTrue(browser.evaluate("document.querySelectorAll('#charts .chart').length").asInt()
          >= 4, text(browser));
      browser.screenshot(SCREENSHOTS.resolve("6-metrics.png"));

      // A named data centre: its panel shows; not a cluster member: that panel stays hidden.
      assertEquals(false, browser.evaluate(
          "document.querySelector('#nav a[data-page=replication]').hidden").asBoolean());
      assertEquals(true, browser.evaluate(
          "document.querySelector('#nav a[data-page=cluster]').hidden").asBoolean());
      show(browser, "#/replication", "replication");
      assertTrue(text(browser).contains("Data centre console"), text(browser));
      browser.screenshot(SCREENSHOTS.resolve("7-replication.png"));

      assertEquals(List.of(), browser.problems(), "problems in the page once it had its token");
    }
  }

  /** Goes to {@code hash} (null: stays) and waits until the page {@code name} shows its data. */
  private static void show(DevToolsBrowser browser, String hash, String name) throws Exception {
    if (hash != null) {
      browser.evaluate("document.getElementById('page').dataset.ready = '';"
          + " location.hash = " + quoted(hash));
    }
    browser.await("document.getElementById('page').dataset.ready === " + quoted(name),
        PAGE_TIMEOUT, "the page " + name);
    assertEquals("", browser.evaluate(
        "document.getElementById('page').dataset.error ? document.body.innerText : ''").asText(),
        "the page " + name + " failed");
  }

  private static String text(DevToolsBrowser browser) throws Exception {
    return browser.evaluate("document.getElementById('page').innerText").asText();
  }

  private static List<String> strings(JsonNode array) {
    List<String> values = new ArrayList<>();
    array.forEach(value -> values.add(value.asText()));
    return values;
  }

  private static boolean contains(JsonNode rows, String transaction, String outcome,
      String text) {
    for (JsonNode row : rows) {
      if ((transaction == null || row.path("tx").asText().equals(transaction))
          && row.path("outcome").asText().equals(outcome)
          && row.path("text").asText().contains(text)) {
        return true;
      }
    }
    return false;
  }

  private static String quoted(String text) {
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
