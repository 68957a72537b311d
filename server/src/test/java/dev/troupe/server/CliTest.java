package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.cli.TroupeCli;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client commands of the CLI against a real server process. */
class CliTest {
  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  private record Run(int exitCode, String out, String err) {}

  private static synchronized Run run(String... args) {
    PrintStream originalOut = System.out;
    PrintStream originalErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      String[] withUrl = new String[args.length + 2];
      System.arraycopy(args, 0, withUrl, 0, args.length);
      withUrl[args.length] = "--url";
      withUrl[args.length + 1] = server.baseUrl();
      int code = args[0].equals("--help") ? TroupeCli.commandLine().execute(args)
          : TroupeCli.commandLine().execute(withUrl);
      return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(originalOut);
      System.setErr(originalErr);
    }
  }

  @Test
  void helpListsEveryCommand() {
    Run help = run("--help");
    assertEquals(0, help.exitCode());
    for (String command : new String[] {"serve", "get", "put", "delete", "act", "types"}) {
      assertTrue(help.out().contains(command), command + " missing from --help:\n" + help.out());
    }
  }

  @Test
  void aSessionFromTheCommandLine() throws Exception {
    Path specs = data.resolve("bank.yaml");
    Files.writeString(specs, RestEndToEndTest.ACCOUNT_YAML + """
        ---
        type: Transfer
        actions:
          book: {params: {from: string, to: string, amount: int},
                 sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                        {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
        """);
    Run applied = run("types", "apply", specs.toString());
    assertEquals(0, applied.exitCode(), applied.err());
    Run listed = run("types");
    assertTrue(listed.out().contains("Transfer") && listed.out().contains("Account"), listed.out());

    assertEquals(0, run("act", "Account/dora", "open", "{\"initial\": 10}").exitCode());
    Run refused = run("act", "Account/dora", "withdraw", "{\"amount\": 11}");
    assertEquals(1, refused.exitCode());
    assertTrue(refused.err().contains("precondition_failed"), refused.err());

    assertEquals(0, run("put", "Note/n1", "text", "\"hello\"").exitCode());
    assertEquals(0, run("put", "Note/n1", "--patch", "{\"lines\": 2}").exitCode());
    Run note = run("get", "Note/n1");
    assertTrue(note.out().contains("\"hello\"") && note.out().contains("\"lines\" : 2"), note.out());
    Run text = run("get", "Note/n1", "text");
    assertTrue(text.out().contains("hello"), text.out());
    assertEquals(0, run("delete", "Note/n1", "text").exitCode());
    assertEquals(0, run("delete", "Note/n1").exitCode());
    Run gone = run("get", "Note/n1");
    assertEquals(1, gone.exitCode());
    assertTrue(gone.err().contains("not_found"), gone.err());
  }
}
