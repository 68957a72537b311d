package dev.troupe.txn.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.troupe.txn.request.IdempotencyCore.Decision;
import dev.troupe.txn.request.IdempotencyCore.Stored;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdempotencyCoreTest {
  private static final long RETENTION = 1_000;
  private static final byte[] FIRST = fingerprint(1);
  private static final byte[] OTHER = fingerprint(2);

  private static byte[] fingerprint(int seed) {
    byte[] bytes = new byte[32];
    bytes[0] = (byte) seed;
    return bytes;
  }

  @Test
  void aNewKeyRunsAndIsInProgressUntilFinished() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    assertInstanceOf(Decision.Run.class, core.decide("k", FIRST, null, false, 0));
    assertInstanceOf(Decision.InProgress.class, core.decide("k", FIRST, null, false, 1));
    assertInstanceOf(Decision.Reused.class, core.decide("k", OTHER, null, false, 1));
    core.finish("k", true, 0);
    assertEquals(1, core.remembered());
    assertEquals(0, core.inProgressCount());
  }

  @Test
  void aStoredAnswerIsReplayedOnlyForTheSameRequest() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    Stored answered = new Stored(FIRST, 100, true);
    assertInstanceOf(Decision.Replay.class, core.decide("k", FIRST, answered, false, 500));
    assertInstanceOf(Decision.Reused.class, core.decide("k", OTHER, answered, false, 500));
    assertEquals(0, core.inProgressCount());
  }

  @Test
  void aCommitWithoutAnAnswerIsRebuilt() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    assertInstanceOf(Decision.Rebuild.class,
        core.decide("k", FIRST, new Stored(FIRST, 100, false), false, 200));
  }

  @Test
  void anEarlierAttemptTheEngineMayStillCommitMakesARetryWait() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    // Its caller got outcome_unknown (finished, not recorded), but the turn is still queued.
    core.decide("k", FIRST, null, false, 0);
    core.finish("k", false, 0);
    assertInstanceOf(Decision.InProgress.class, core.decide("k", FIRST, null, true, 1));
    // It committed meanwhile: the stored record decides, not the engine.
    assertInstanceOf(Decision.Rebuild.class,
        core.decide("k", FIRST, new Stored(FIRST, 0, false), true, 2));
    assertInstanceOf(Decision.Run.class, core.decide("k", FIRST, null, false, 3));
  }

  @Test
  void anExpiredRecordRunsAgain() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    Stored old = new Stored(FIRST, 100, true);
    assertInstanceOf(Decision.Replay.class, core.decide("k", FIRST, old, false, 100 + RETENTION - 1));
    assertInstanceOf(Decision.Run.class, core.decide("k", OTHER, old, false, 100 + RETENTION));
  }

  @Test
  void aRefusalIsNotRemembered() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    core.decide("k", FIRST, null, false, 0);
    core.finish("k", false, 0);
    assertEquals(0, core.remembered());
    assertInstanceOf(Decision.Run.class, core.decide("k", OTHER, null, false, 1));
  }

  @Test
  void pastMaxKeysANewKeyEvictsTheOldestRememberedOne() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 2);
    core.remember("a", 0);
    core.decide("b", FIRST, null, false, 10);
    // "a" is the oldest and not running: evicted to make room for "c".
    assertInstanceOf(Decision.Run.class, core.decide("c", FIRST, null, false, 10));
    assertEquals(List.of("a"), core.takeEvicted());
    assertEquals(List.of(), core.takeEvicted());
    assertEquals(1, core.evictedTotal());
    // Until its record is deleted, a retry with "a" waits rather than running beside it.
    assertInstanceOf(Decision.InProgress.class,
        core.decide("a", FIRST, new Stored(FIRST, 0, true), false, 11));
    core.forgotten("a");
    core.finish("b", true, 10);
    core.finish("c", true, 10);
    assertEquals(2, core.remembered());
    assertEquals(10, core.oldestRecordedAtMillis());
  }

  @Test
  void onlyWhenEveryKeyIsInProgressIsANewKeyRefused() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 2);
    core.decide("a", FIRST, null, false, 0);
    core.decide("b", FIRST, null, false, 0);
    assertInstanceOf(Decision.Full.class, core.decide("c", FIRST, null, false, 1));
    assertEquals(List.of(), core.takeEvicted());
    core.finish("a", true, 0);
    // "a" is remembered now, and not running: it makes room.
    assertInstanceOf(Decision.Run.class, core.decide("c", FIRST, null, false, 2));
    assertEquals(List.of("a"), core.takeEvicted());
    // A remembered key that is not evicted still answers.
    core.finish("b", true, 0);
    assertInstanceOf(Decision.Replay.class,
        core.decide("b", FIRST, new Stored(FIRST, 0, true), false, 3));
  }

  @Test
  void pruningSkipsStaleEntriesAndKeysRunningAgain() {
    IdempotencyCore core = new IdempotencyCore(RETENTION, 10);
    core.remember("a", 0);
    core.remember("b", 10);
    core.remember("a", 500); // recorded again: the first entry is stale
    assertEquals(List.of("b"), core.pruneExpired(RETENTION + 10));
    assertEquals(1, core.remembered());
    // Until its record is deleted, a pruned key waits: a new record could be deleted with it.
    assertInstanceOf(Decision.InProgress.class, core.decide("b", OTHER, null, false, RETENTION + 20));
    core.forgotten("b");
    assertInstanceOf(Decision.Run.class, core.decide("b", OTHER, null, false, RETENTION + 20));
    core.finish("b", false, RETENTION + 20);
    // "a" expires and runs again over its expired record: not pruned while it runs.
    assertInstanceOf(Decision.Run.class,
        core.decide("a", OTHER, new Stored(FIRST, 500, true), false, 1_500));
    assertEquals(List.of(), core.pruneExpired(1_600));
    core.finish("a", true, 1_500);
    assertEquals(List.of(), core.pruneExpired(1_600));
    assertEquals(List.of("a"), core.pruneExpired(2_500));
    assertEquals(0, core.remembered());
  }

  @Test
  void keysAreVisibleAsciiOfBoundedLength() {
    assertNull(IdempotencyCore.invalidKey("abc-123_XYZ:~!"));
    assertNull(IdempotencyCore.invalidKey("x".repeat(255)));
    assertNotNull(IdempotencyCore.invalidKey(""));
    assertNotNull(IdempotencyCore.invalidKey("x".repeat(256)));
    assertNotNull(IdempotencyCore.invalidKey("has space"));
    assertNotNull(IdempotencyCore.invalidKey("tab\t"));
    assertNotNull(IdempotencyCore.invalidKey("é"));
    assertNotEquals(IdempotencyCore.qualifiedKey("", "k"), IdempotencyCore.qualifiedKey("k", ""));
  }
}
