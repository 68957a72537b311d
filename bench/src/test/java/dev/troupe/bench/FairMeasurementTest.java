package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 20's fair measurement in the harness: the rotating order, the wait for an idle machine
 * (on injected CPU samples and a fake clock: nothing really waits), the spread of rounds and of
 * ratios, and the JSON fields that carry them.
 */
class FairMeasurementTest {
  @Test
  void theOrderRotatesEveryRound() {
    assertEquals(List.of("A", "B"), AlternatingComparison.order(List.of("A", "B"), 0));
    assertEquals(List.of("B", "A"), AlternatingComparison.order(List.of("A", "B"), 1));
    assertEquals(List.of("A", "B"), AlternatingComparison.order(List.of("A", "B"), 2));
    assertEquals(List.of("B", "C", "A"), AlternatingComparison.order(List.of("A", "B", "C"), 1));
    assertEquals(List.of("C", "A", "B"), AlternatingComparison.order(List.of("A", "B", "C"), 2));
    assertEquals(List.of("A"), AlternatingComparison.order(List.of("A"), 3));
  }

  /** CPU samples from a script, a pause that only moves a fake clock. */
  private static final class FakeMachine {
    final Deque<IdleWait.Sample> samples = new ArrayDeque<>();
    final AtomicLong nanos = new AtomicLong();
    int pauses;

    /** One window with {@code idle} of {@code total} ticks idle. */
    FakeMachine window(long idle, long total) {
      IdleWait.Sample last = samples.isEmpty() ? new IdleWait.Sample(1000, 5000)
          : samples.peekLast();
      samples.add(last);
      samples.add(new IdleWait.Sample(last.idleTicks() + idle, last.totalTicks() + total));
      return this;
    }

    IdleWait waiter(double idlePercent, long windowMillis, long maxWaitMillis) {
      return new IdleWait(new IdleWait.Settings(idlePercent, Duration.ofMillis(windowMillis),
          Duration.ofMillis(maxWaitMillis)), samples::removeFirst, duration -> {
            pauses++;
            nanos.addAndGet(duration.toNanos());
          }, nanos::get);
    }
  }

  @Test
  void anIdleMachineIsWaitedForOneWindowOnly() throws Exception {
    FakeMachine machine = new FakeMachine().window(180, 200);
    IdleWait.Outcome outcome = machine.waiter(80, 250, 5000).await();
    assertTrue(outcome.idle());
    assertEquals(90.0, outcome.idlePercent(), 1e-9);
    assertEquals(0.25, outcome.waitedSeconds(), 1e-9);
    assertEquals(1, machine.pauses);
  }

  @Test
  void aBusyMachineIsWaitedForUntilItGoesIdle() throws Exception {
    FakeMachine machine = new FakeMachine().window(20, 200).window(100, 200).window(190, 200);
    IdleWait.Outcome outcome = machine.waiter(80, 250, 5000).await();
    assertTrue(outcome.idle());
    assertEquals(95.0, outcome.idlePercent(), 1e-9);
    assertEquals(0.75, outcome.waitedSeconds(), 1e-9);
    assertEquals(3, machine.pauses);
  }

  @Test
  void theWaitIsBoundedAndSaysWhatItSaw() throws Exception {
    FakeMachine machine = new FakeMachine();
    for (int window = 0; window < 10; window++) {
      machine.window(50, 200);
    }
    IdleWait.Outcome outcome = machine.waiter(80, 250, 1000).await();
    assertFalse(outcome.idle());
    assertEquals(25.0, outcome.idlePercent(), 1e-9);
    assertEquals(1.0, outcome.waitedSeconds(), 1e-9);
    assertEquals(4, machine.pauses, "gives up after the longest wait");
  }

  @Test
  void aZeroThresholdWaitsForNothing() throws Exception {
    FakeMachine machine = new FakeMachine();
    IdleWait.Outcome outcome = machine.waiter(0, 250, 1000).await();
    assertEquals(0, machine.pauses);
    assertTrue(Double.isNaN(outcome.idlePercent()));
  }

  @Test
  void readsIdleAndIowaitFromProcStat() {
    IdleWait.Sample sample = IdleWait.parseProcStat(
        "cpu  100 5 50 800 40 1 2 3 7 0");
    assertEquals(840, sample.idleTicks());
    assertEquals(1001, sample.totalTicks(), "the first eight fields; guest is in user");
    assertThrows(IllegalArgumentException.class, () -> IdleWait.parseProcStat("intr 1 2 3"));
    assertEquals(50.0, IdleWait.idlePercent(new IdleWait.Sample(0, 0),
        new IdleWait.Sample(50, 100)), 1e-9);
    assertEquals(100.0, IdleWait.idlePercent(new IdleWait.Sample(5, 5),
        new IdleWait.Sample(5, 5)), 1e-9, "no tick passed: nothing ran");
  }

  @Test
  void spreadsGiveMinMaxMedianAndRelativeDeviation() {
    Spread spread = Spread.of(List.of(110.0, 90.0, 100.0, 100.0, 100.0));
    assertEquals(90.0, spread.min());
    assertEquals(110.0, spread.max());
    assertEquals(100.0, spread.median());
    // Sample standard deviation sqrt(200 / 4) over a mean of 100.
    assertEquals(Math.sqrt(50), spread.relativeStandardDeviationPercent(), 1e-9);
    assertEquals(5, spread.rounds());
    assertEquals(0.0, Spread.of(List.of(7.0)).relativeStandardDeviationPercent());
    assertEquals(2.5, Spread.of(List.of(3.0, 2.0)).median());

    Spread ratios = Spread.ofRatios(List.of(200.0, 150.0, 300.0), List.of(100.0, 100.0, 100.0));
    assertEquals(1.5, ratios.min());
    assertEquals(3.0, ratios.max());
    assertEquals(2.0, ratios.median());
    Spread scaled = ratios.scaled(0.5);
    assertEquals(0.75, scaled.min());
    assertEquals(1.5, scaled.max());
    assertEquals(ratios.relativeStandardDeviationPercent(),
        scaled.relativeStandardDeviationPercent());
  }

  /** A contender whose operations sleep a little; its CPU meter counts one second per reading. */
  private record Sleeper(String name, List<String> opened, long millisPerOperation)
      implements AlternatingComparison.Contender {
    @Override
    public AlternatingComparison.Session open(int workers) {
      opened.add(name);
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) throws Exception {
          Thread.sleep(millisPerOperation);
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public CpuMeter cpu() {
      AtomicLong readings = new AtomicLong();
      return new CpuMeter() {
        @Override
        public double seconds() {
          return readings.incrementAndGet() * 0.01;
        }

        @Override
        public String describe() {
          return "fake " + name;
        }
      };
    }
  }

  @Test
  void theComparisonRotatesWaitsAndReportsSpreadCpuAndRoundsInJson() throws Exception {
    List<String> opened = new ArrayList<>();
    FakeMachine machine = new FakeMachine();
    for (int window = 0; window < 6; window++) {
      machine.window(190, 200);
    }
    AlternatingComparison.Settings settings = new AlternatingComparison.Settings(2, 3,
        Duration.ZERO, Duration.ofMillis(40), 1, new IdleWait.Settings(80,
            Duration.ofMillis(100), Duration.ofSeconds(1)));
    BenchReport report = new BenchReport("fair", "harness");
    settings.describe(report);
    Map<String, AlternatingComparison.Outcome> outcomes = AlternatingComparison.run("fair",
        settings, List.of(new Sleeper("a", opened, 2), new Sleeper("b", opened, 4)), report,
        machine.waiter(80, 100, 1000));
    // Warm-up A B, then B A, A B, B A.
    assertEquals(List.of("a", "b", "b", "a", "a", "b", "b", "a"), opened);
    assertEquals(6, machine.pauses, "one idle window before every measured session");
    AlternatingComparison.ratio(report, "a / b", outcomes.get("a"), outcomes.get("b"), 1, null);

    JsonNode json = report.toJson();
    JsonNode a = json.path("results").path("a");
    for (String figure : List.of("throughput_per_second", "throughput_min_per_second",
        "throughput_max_per_second", "throughput_rsd_percent", "cpu_microseconds_per_operation",
        "cpu_cores", "idle_wait_seconds", "round_3_per_second")) {
      assertTrue(a.path(figure).isNumber(), figure + " in " + a);
    }
    assertTrue(a.path("throughput_min_per_second").asDouble()
        <= a.path("throughput_max_per_second").asDouble());
    assertEquals(0.3, a.path("idle_wait_seconds").asDouble(), 1e-9);
    // The fake meter moves 0.01 s between the window's two readings.
    assertEquals(0.01 / 0.04, a.path("cpu_cores").asDouble(), 1e-6);
    JsonNode spread = json.path("ratio_spreads").path("a / b");
    assertEquals(3, spread.path("rounds").asInt());
    assertTrue(spread.path("min").asDouble() <= json.path("ratios").path("a / b").asDouble()
        && json.path("ratios").path("a / b").asDouble() <= spread.path("max").asDouble()
        + 1e-9, json.toString());
    assertTrue(spread.path("rsd_percent").isNumber());
    JsonNode rounds = json.path("rounds");
    assertEquals(6, rounds.size());
    assertEquals("b", rounds.get(0).path("system").asText());
    assertEquals(1, rounds.get(0).path("place").asInt());
    assertEquals(1, rounds.get(0).path("round").asInt());
    assertEquals(95.0, rounds.get(0).path("idle_percent").asDouble(), 1e-9);
    assertEquals(0.1, rounds.get(0).path("idle_wait_seconds").asDouble(), 1e-9);
    assertTrue(rounds.get(0).path("cpu_microseconds_per_operation").asDouble() > 0);
    assertEquals("fake a", json.path("parameters").path("cpu_measured").path("a").asText());
    assertEquals(80.0, json.path("parameters").path("idle_percent_between_rounds").asDouble());

    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    report.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertTrue(text.contains("idle_wait_seconds") && text.contains("cpu_cores")
        && text.contains("rounds min-max") && text.contains("rsd %"), text);
  }

  @Test
  void unmeasuredFiguresAreNullInJsonAndADashInText() {
    BenchReport report = new BenchReport("demo", "nan");
    Map<String, Object> row = AlternatingComparison.roundRow(1, 1, "s",
        IdleWait.Outcome.SKIPPED, 10, Double.NaN, 5, 1);
    report.round(row);
    JsonNode json = report.toJson();
    assertTrue(json.path("rounds").get(0).path("idle_percent").isNull());
    assertTrue(json.path("rounds").get(0).path("cpu_cores").isNull());
    assertEquals("-", BenchReport.format(Double.NaN));
  }
}
