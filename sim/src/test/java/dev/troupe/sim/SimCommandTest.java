package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code troupe sim} through its command line. */
class SimCommandTest {
  private static String run(int expectedExitCode, String... arguments) {
    PrintStream standardOut = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      assertEquals(expectedExitCode, new CommandLine(new SimCommand()).execute(arguments));
    } finally {
      System.setOut(standardOut);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aSweepReportsItsRunsAndStepsPerSecond() {
    String output = run(0, "--seeds", "2", "--from", "10");
    assertTrue(output.contains("12 runs, 0 failed"), output);
    assertTrue(output.contains("steps/s"), output);
  }

  @Test
  void oneSeedPrintsWhatItDid() {
    String output = run(0, "--seed", "7", "--admission", "keys", "--mode", "planned");
    assertTrue(output.startsWith("keys planned seed 7: ok ("), output);
  }

  @Test
  void badOptionsAreRefused() {
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--admission", "mvcc"));
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--mode", "auto"));
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--accounts", "1"));
  }

  @Test
  void aSharedStoreIsAnOptionAndItsBreakageFails() {
    String output = run(0, "--nodes", "3", "--shared-store", "--seeds", "2", "--from", "1",
        "--admission", "serial", "--mode", "dynamic");
    assertTrue(output.contains("2 runs, 0 failed"), output);
    String broken = run(1, "--nodes", "3", "--shared-store", "--seed", "6", "--admission",
        "serial", "--mode", "dynamic", "--breakage", "UNFENCED_WRITES");
    assertTrue(broken.contains("FAILED: --seed 6") && broken.contains("--shared-store --breakage"
        + " UNFENCED_WRITES: journal record"), broken);
    // The coordinator fence broken: a removed member's transaction presumed aborted, then
    // committed by its zombie coordinator (or by a live one whose part moved).
    String presumed = run(1, "--nodes", "3", "--shared-store", "--seed", "4", "--admission",
        "serial", "--mode", "dynamic", "--breakage", "PRESUME_ABORT_WITHOUT_END");
    assertTrue(presumed.contains("FAILED: --seed 4") && presumed.contains("--breakage"
        + " PRESUME_ABORT_WITHOUT_END: transaction"), presumed);
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--shared-store"));
  }

  @Test
  void aLossyNetworkBetweenCoordinatorsAndParticipantsIsAnOption() {
    String output = run(0, "--seed", "3", "--admission", "serial", "--mode", "dynamic",
        "--internal-network", "lossy");
    assertTrue(output.contains("in-doubt questions"), output);
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--internal-network", "flaky"));
  }

  @Test
  void dataCentresSweepAndWriteAPlumeHistory(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path directory) throws java.io.IOException {
    java.nio.file.Path file = directory.resolve("history.plume");
    String output = run(0, "--dcs", "3", "--seeds", "3", "--from", "1", "--history",
        file.toString());
    assertTrue(output.contains("3 runs, 0 failed"), output);
    String history = java.nio.file.Files.readString(file);
    assertTrue(history.lines().allMatch(line -> line.matches("[rw]\\(\\d+,\\d+,\\d+,\\d+\\)")),
        history);
    assertTrue(history.contains("w("), history);
  }

  @Test
  void aBreakageOfTheDataCentresIsReportedWithItsSeed() {
    String output = run(1, "--dcs", "3", "--seed", "3", "--breakage",
        "SPLIT_MULTI_ENTITY_TRANSACTIONS");
    assertTrue(output.contains("FAILED: --dcs 3 --seed 3 --breakage"
        + " SPLIT_MULTI_ENTITY_TRANSACTIONS: atomic visibility"), output);
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--dcs", "6"));
    assertNotEquals(0, new CommandLine(new SimCommand()).execute("--history", "x"));
  }
}
