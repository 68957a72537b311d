package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import dev.troupe.server.http.Authorization;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python client ({@code clients/python}) against a real server: {@code
 * src/test/python-client/run.sh} installs it from the checkout with pip (its dependencies from
 * PyPI) into {@code target/} and runs its pytest suite, which exercises every method of the
 * blocking and the asyncio client, the entity contract ({@code EntityContract}'s cases), typed
 * errors, retries with idempotency keys through a proxy that loses answers, and the causal token.
 *
 * <p>The server is a named data centre with no peers, so it sends a real {@code
 * Troupe-Causal-Token} with every answer and waits on the ones the client sends back, and it
 * requires bearer tokens: the tests get one with every scope ({@code TROUPE_TOKEN}) and one that
 * may only read ({@code TROUPE_READ_TOKEN}). No test may be skipped.
 */
class PythonClientTest {
  /** Installing the client (first use: a virtual environment and PyPI) and the run together. */
  private static final long TIMEOUT_MINUTES = 8;
  private static final Path SCRIPT = Path.of("src/test/python-client/run.sh");
  private static final Path REPORTS = Path.of("target/python-client");

  @TempDir Path data;

  @Test
  void pythonClientTestsPassAgainstARealServer() throws Exception {
    Files.createDirectories(REPORTS);
    Path output = REPORTS.resolve("output.txt");
    String token = UUID.randomUUID().toString();
    String readToken = UUID.randomUUID().toString();
    try (ServerProcess server = ServerProcess.start(data.resolve("node"),
        "troupe.dc.name=python-client",
        "troupe.http.auth.tokens=[" + token("python", token, "read, write, admin") + ", "
            + token("reader", readToken, "read") + "]")) {
      ProcessBuilder builder = new ProcessBuilder("bash", SCRIPT.toString(), server.baseUrl(),
          REPORTS.toAbsolutePath().toString())
          .redirectErrorStream(true).redirectOutput(output.toFile());
      builder.environment().put("TROUPE_TOKEN", token);
      builder.environment().put("TROUPE_READ_TOKEN", readToken);
      Process run = builder.start();
      boolean finished = run.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES);
      if (!finished) {
        run.destroyForcibly().waitFor();
      }
      String printed = Files.readString(output);
      System.out.println(printed);
      String replay = "replay: start a server with --set troupe.dc.name=NAME and tokens, then"
          + " TROUPE_TOKEN=... TROUPE_READ_TOKEN=... " + SCRIPT + " http://127.0.0.1:PORT "
          + REPORTS.toAbsolutePath();
      assertTrue(finished, "the Python client's tests did not finish within " + TIMEOUT_MINUTES
          + " min (" + replay + ")\n" + printed);
      assertTrue(server.isAlive(), "the server died under the client's tests\n" + printed
          + "\n" + server.log());
      assertEquals(0, run.exitValue(), "the Python client's tests failed (exit "
          + run.exitValue() + "; " + replay + ")\n" + printed);
      List<String> unexpectedSkips = printed.lines()
          .filter(line -> line.startsWith("SKIPPED"))
          .toList();
      assertEquals(List.of(), unexpectedSkips, "tests skipped\n" + printed);
      assertTrue(printed.lines().anyMatch(line -> line.matches("\\d+ passed.*")),
          "no pytest summary\n" + printed);
    }
  }

  private static String token(String name, String secret, String scopes) {
    return "{name = " + name + ", sha256 = \"" + Authorization.sha256Hex(secret)
        + "\", scopes = [" + scopes + "]}";
  }
}
