package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The simulated file: synced records survive, the rest is lost or torn, never returned corrupt. */
class SimulatedLogTest {
  private static byte[] record(int i) {
    return ("record-" + i + "-" + "x".repeat(i % 17)).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aCrashKeepsExactlyTheSyncedRecordsWhenNothingIsTorn() {
    SimulatedLog log = new SimulatedLog();
    log.append(record(1));
    log.append(record(2));
    log.sync();
    log.append(record(3));
    assertTrue(log.unsyncedBytes() > 0);
    log.crash(new SplittableRandom(1), 0, 0);
    List<byte[]> read = log.recover();
    assertEquals(2, read.size());
    assertArrayEquals(record(2), read.get(1));
    log.append(record(4));
    log.sync();
    assertEquals(3, log.recover().size());
  }

  @Test
  void underTornAndCorruptedTailsRecoveryReturnsAPrefixThatHoldsEverySyncedRecord() {
    for (long seed = 0; seed < 500; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      SimulatedLog log = new SimulatedLog();
      List<byte[]> appended = new ArrayList<>();
      int synced = 0;
      int records = 1 + random.nextInt(30);
      for (int i = 0; i < records; i++) {
        appended.add(record(i));
        log.append(record(i));
        if (random.nextInt(4) == 0) {
          log.sync();
          synced = appended.size();
        }
      }
      log.crash(random, 0.7, 0.5);
      List<byte[]> read = log.recover();
      assertTrue(read.size() >= synced, "seed " + seed + ": lost a synced record");
      assertTrue(read.size() <= appended.size(), "seed " + seed);
      for (int i = 0; i < read.size(); i++) {
        assertArrayEquals(appended.get(i), read.get(i), "seed " + seed + ", record " + i);
      }
    }
  }
}
