package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The servers a benchmark starts do not outlive it. */
class TroupeProcessTest {
  @TempDir Path directory;

  /**
   * A benchmark's JVM that exits without closing its server (as on Ctrl-C or SIGTERM) stops it:
   * the server is gone soon after, not left running orphaned.
   */
  @Test
  void aServerIsStoppedWhenTheBenchmarkExitsWithoutClosingIt() throws Exception {
    Process benchmark = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), ExitsWithoutClosing.class.getName(),
        directory.toString())
        .redirectErrorStream(true).start();
    long serverPid;
    try (BufferedReader output = new BufferedReader(
        new InputStreamReader(benchmark.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      String pidLine = null;
      StringBuilder seen = new StringBuilder();
      while ((line = output.readLine()) != null) {
        seen.append(line).append('\n');
        if (line.startsWith("server pid ")) {
          pidLine = line;
        }
      }
      assertTrue(pidLine != null, "the benchmark JVM printed its server's pid:\n" + seen);
      serverPid = Long.parseLong(pidLine.substring("server pid ".length()).strip());
    }
    assertTrue(benchmark.waitFor(60, TimeUnit.SECONDS), "the benchmark JVM exited");
    assertEquals(0, benchmark.exitValue());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (ProcessHandle.of(serverPid).map(ProcessHandle::isAlive).orElse(false)
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    boolean alive = ProcessHandle.of(serverPid).map(ProcessHandle::isAlive).orElse(false);
    ProcessHandle.of(serverPid).ifPresent(ProcessHandle::destroyForcibly);
    assertTrue(!alive, "the server " + serverPid + " outlived the benchmark that started it");
  }

  /** Starts a server, waits until it serves, prints its pid and exits without closing it. */
  public static final class ExitsWithoutClosing {
    public static void main(String[] arguments) throws Exception {
      Path directory = Path.of(arguments[0]);
      TroupeProcess server = TroupeProcess.start(directory.resolve("data"),
          directory.resolve("server.log"), List.of("-Xmx256m"));
      server.awaitHealthy(Duration.ofSeconds(60));
      System.out.println("server pid " + server.pid());
      System.exit(0);
    }
  }
}
