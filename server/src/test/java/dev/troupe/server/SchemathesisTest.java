package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzzes every route of a real server with schemathesis (from PyPI, installed by
 * {@code src/test/schemathesis/run.sh} into {@code target/}) against the OpenAPI document the
 * server serves, for a bounded number of cases per route: no 5xx, no status, content type, header
 * or body outside the document, and the server still alive and live afterwards.
 *
 * <p>The seed comes from {@code TROUPE_SCHEMATHESIS_SEED} ({@code ./troupe test} picks and prints
 * one) or is drawn here; it is printed, written to {@code target/schemathesis/seed.txt} and named
 * in a failure, with the command that replays it. {@code TROUPE_SCHEMATHESIS_MAX_EXAMPLES} sets the
 * cases per route (default {@value #DEFAULT_MAX_EXAMPLES}, about a minute on two cores; more for a deeper run).
 */
class SchemathesisTest {
  static final int DEFAULT_MAX_EXAMPLES = 60;
  /** Installing schemathesis and the run together; past this the run is stopped and failed. */
  private static final long TIMEOUT_MINUTES = 15;
  private static final Path SCRIPT = Path.of("src/test/schemathesis/run.sh");
  private static final Path REPORTS = Path.of("target/schemathesis");

  @TempDir Path data;

  @Test
  void fuzzingFindsNothingOutsideTheDocument() throws Exception {
    long seed = setting("TROUPE_SCHEMATHESIS_SEED", new Random().nextInt(Integer.MAX_VALUE));
    long maxExamples = setting("TROUPE_SCHEMATHESIS_MAX_EXAMPLES", DEFAULT_MAX_EXAMPLES);
    Files.createDirectories(REPORTS);
    Files.writeString(REPORTS.resolve("seed.txt"), seed + "\n");
    Path output = REPORTS.resolve("output.txt");
    try (ServerProcess server = ServerProcess.start(data.resolve("node"))) {
      declareAndFill(server);
      String replay = SCRIPT + " " + server.baseUrl().replaceAll(":\\d+$", ":PORT") + " " + seed
          + " " + REPORTS.toAbsolutePath() + " " + maxExamples;
      System.out.println("fuzz seed " + seed + "; replay against a server like this"
          + " test's: " + replay + "; output in " + output.toAbsolutePath());
      Process run = new ProcessBuilder("bash", SCRIPT.toString(), server.baseUrl(),
          Long.toString(seed), REPORTS.toAbsolutePath().toString(), Long.toString(maxExamples))
          .redirectErrorStream(true).redirectOutput(output.toFile()).start();
      boolean finished = run.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES);
      if (!finished) {
        run.destroyForcibly().waitFor();
      }
      String printed = Files.readString(output);
      System.out.println(printed);
      String context = "fuzz seed " + seed + " (replay: " + replay + ")\n" + tail(printed);
      assertTrue(finished, "schemathesis did not finish within " + TIMEOUT_MINUTES + " min; "
          + context);
      assertTrue(server.isAlive(), "the server died under fuzzing; " + context + "\n"
          + server.log());
      Answer live = server.get("/v1/health/live");
      assertEquals(200, live.status(), "the server is not live after fuzzing: " + live.text());
      assertEquals(0, run.exitValue(), "schemathesis found failures (exit " + run.exitValue()
          + "); " + context);
    }
  }

  /**
   * The entities the document's examples name (Account/alice, its key balance, its action
   * deposit) exist, so example-based cases reach the routes' logic and not only 404s.
   */
  private static void declareAndFill(ServerProcess server) throws Exception {
    Answer account = server.send("PUT", "/v1/types/Account", RestEndToEndTest.ACCOUNT_YAML,
        "application/yaml");
    assertEquals(200, account.status(), account.text());
    Answer loose = server.send("PUT", "/v1/types/Loose", "{\"schemaless\": true}");
    assertEquals(200, loose.status(), loose.text());
    for (String id : List.of("alice", "bob")) {
      Answer opened = server.send("POST", "/v1/entities/Account/" + id + "/actions/open",
          "{\"initial\": 100}");
      assertEquals(200, opened.status(), opened.text());
    }
  }

  private static long setting(String name, long fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : Long.parseLong(value.trim());
  }

  /** The end of schemathesis's output: its failures and summary. */
  private static String tail(String text) {
    int keep = 12_000;
    return text.length() <= keep ? text : "..." + text.substring(text.length() - keep);
  }
}
