package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * An idempotency record is durable exactly when the write it belongs to is: it is written in the
 * same atomic write batch as a single turn's journal record, or as a transaction's decision.
 * Checked on the real engine over a {@link MemoryDisk} that crashes (power loss keeps a prefix of
 * the written batches that includes every synced one).
 */
class IdempotencyRecordTest {
  private static final Path NO_DIRECTORY = Path.of("unused");
  private static final byte[] FINGERPRINT = new byte[IdempotencyRecord.FINGERPRINT_BYTES];

  private static RocksStore open(Durability durability, FakeClock clock, KeyValueDisk disk) {
    return RocksStore.open(Fixtures.settings(NO_DIRECTORY).withDurability(durability), clock,
        disk, RocksStore.Execution.STEPPED);
  }

  private static void settle(RocksStore store) {
    for (int passes = 0; store.runPendingWork(); passes++) {
      if (passes > 1_000_000) {
        fail("the stepped store never ran out of work");
      }
    }
  }

  @Test
  void encodingRoundTripsAndDamageIsDetected() {
    IdempotencyRecord record = IdempotencyRecord.pending("\u0000key", FINGERPRINT, 42)
        .committedAt(new EntityId("Account", "a"), 7).withAnswer(200, "{\"version\":7}".getBytes());
    byte[] encoded = Codec.encodeIdempotency(record);
    assertEquals(record, Codec.decodeIdempotency(encoded));
    encoded[5] ^= 1;
    assertThrows(CorruptDataException.class, () -> Codec.decodeIdempotency(encoded));
  }

  @Test
  void aTurnsRecordIsDurableWithItsCommitAndOnlyWithIt() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(Durability.SYNC, clock, disk);
    EntityId entity = new EntityId("Account", "a");
    long committedId = store.newTransactionId();
    store.attachIdempotency(committedId, IdempotencyRecord.pending("\u0000one", FINGERPRINT, 1));
    CompletableFuture<Committed> committed = store.commit(committedId,
        List.of(Fixtures.write(entity, new Operation.Increment("n", 5))));
    settle(store);
    long version = committed.join().commitTimestamp();
    // Queued, never written: lost by the crash together with its record.
    long lostId = store.newTransactionId();
    store.attachIdempotency(lostId, IdempotencyRecord.pending("\u0000two", FINGERPRINT, 2));
    store.commit(lostId, List.of(Fixtures.write(entity, new Operation.Increment("n", 100))));

    RocksStore recovered = open(Durability.SYNC, clock, disk.crash(new SplittableRandom(1), 1.0));
    IdempotencyRecord one = recovered.idempotencyRecord("\u0000one").orElseThrow();
    assertEquals(entity, one.entity());
    assertEquals(version, one.commitTimestamp());
    assertArrayEquals(FINGERPRINT, one.fingerprint());
    assertTrue(recovered.idempotencyRecord("\u0000two").isEmpty());
    assertEquals(5, Fixtures.counter(recovered.read(entity), "n"));
    assertEquals(List.of(one), recovered.idempotencyRecords());
    recovered.close();
  }

  @Test
  void aTransactionsRecordIsWrittenWithItsDecisionAndSurvivesRecovery() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(Durability.SYNC, clock, disk);
    EntityId a = new EntityId("Account", "a");
    EntityId b = new EntityId("Account", "b");
    store.prepare(new PreparedTransaction(9, a, List.of(new Operation.Increment("n", -3))));
    store.prepare(new PreparedTransaction(9, b, List.of(new Operation.Increment("n", 3))));
    CompletableFuture<Void> decided = store.persistDecision(new DecidedTransaction(9,
        List.of(a, b), IdempotencyRecord.pending("\u0000tx", FINGERPRINT, 3)));
    settle(store);
    decided.join();

    RocksStore recovered = open(Durability.SYNC, clock, disk.crash(new SplittableRandom(2), 0.5));
    InDoubtResolution resolution = recovered.resolveInDoubtTransactions((part, state) -> {
      throw new AssertionError("no redo");
    });
    assertEquals(2, resolution.toCommit().size());
    IdempotencyRecord record = recovered.idempotencyRecord("\u0000tx").orElseThrow();
    assertEquals(9, record.transactionId());
    assertEquals(3, Fixtures.counter(recovered.read(b), "n"));
    // An answer replaces the record; forgetting deletes it.
    recovered.recordIdempotencyAnswers(List.of(record.withAnswer(200, new byte[] {'{', '}'})));
    settle(recovered);
    assertTrue(recovered.idempotencyRecord("\u0000tx").orElseThrow().hasAnswer());
    recovered.forgetIdempotencyRecord("\u0000tx");
    settle(recovered);
    assertTrue(recovered.idempotencyRecord("\u0000tx").isEmpty());
    recovered.close();
  }

  /**
   * Under asynchronous durability a crash keeps any prefix of the written batches: whatever
   * survives, a key's record exists exactly when its write does.
   */
  @Test
  void aRecordExistsExactlyWhenItsWriteSurvivedAnyCrash() {
    for (int seed = 0; seed < 50; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
      MemoryDisk disk = new MemoryDisk();
      RocksStore store = open(Durability.ASYNC, clock, disk);
      List<EntityId> written = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        EntityId entity = new EntityId("Account", "e" + i);
        long id = store.newTransactionId();
        store.attachIdempotency(id, IdempotencyRecord.pending("\u0000k" + i, FINGERPRINT, i));
        store.commit(id, List.of(Fixtures.write(entity, new Operation.Increment("n", 1))));
        written.add(entity);
        if (random.nextInt(3) == 0) {
          store.runPendingWork();
        }
        if (random.nextInt(10) == 0) {
          store.flushWriteAheadLog();
        }
      }
      RocksStore recovered = open(Durability.ASYNC, clock, disk.crash(random, 0.5));
      for (int i = 0; i < written.size(); i++) {
        Optional<IdempotencyRecord> record = recovered.idempotencyRecord("\u0000k" + i);
        long value = Fixtures.counter(recovered.read(written.get(i)), "n");
        assertEquals(value == 1, record.isPresent(), "seed " + seed + ", key " + i);
      }
      recovered.close();
    }
  }
}
