package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prepared parts and commit decisions: durable, invisible to reads until committed, and resolved
 * by {@link RocksStore#resolveInDoubtTransactions} after a restart (commit with a decision,
 * presumed abort without one).
 */
class TwoPhaseCommitStateTest {
  /**
   * Opens the store under test: on RocksDB in {@code settings.directory()} here, on PostgreSQL in
   * {@code TwoPhaseCommitStateOnPostgresTest}, which runs these tests again.
   */
  RocksStore open(StorageSettings settings, java.util.function.LongSupplier clock) {
    return RocksStore.open(settings, clock);
  }

  @TempDir Path directory;

  private static final EntityId A = new EntityId("Account", "a");
  private static final EntityId B = new EntityId("Account", "b");
  private static final EntityId C = new EntityId("Account", "c");
  private static final Store.Redo NO_REDO = (part, state) -> {
    throw new AssertionError("no part needs a redo here");
  };

  @Test
  void inDoubtPartsAreCommittedWithADecisionAndAbortedWithout() {
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      store.commit(store.newTransactionId(),
          List.of(Fixtures.write(A, new Operation.Increment("n", 100)))).join();
      // Transaction 1: both parts prepared and the decision durable, then the "crash".
      store.prepare(new PreparedTransaction(1, A, List.of(new Operation.Increment("n", -30)))).join();
      store.prepare(new PreparedTransaction(1, B, List.of(new Operation.Increment("n", 30)))).join();
      store.persistDecision(new DecidedTransaction(1, List.of(A, B))).join();
      // Transaction 2: prepared, never decided.
      store.prepare(new PreparedTransaction(2, C, List.of(new Operation.Increment("n", 5)))).join();
      assertEquals(100, Fixtures.counter(store.read(A), "n"), "prepared is not visible");
      assertEquals(0, Fixtures.counter(store.read(B), "n"));
    }
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      InDoubtResolution resolution = store.resolveInDoubtTransactions(NO_REDO);
      assertEquals(2, resolution.toCommit().size());
      assertEquals(List.of(2L), resolution.toAbort().stream()
          .map(PreparedTransaction::transactionId).toList());
      assertEquals(1, resolution.decisionsToForget().size());
      assertEquals(70, Fixtures.counter(store.read(A), "n"));
      assertEquals(30, Fixtures.counter(store.read(B), "n"));
      assertEquals(0, Fixtures.counter(store.read(C), "n"));
    }
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      assertTrue(store.resolveInDoubtTransactions(NO_REDO).isEmpty(), "resolved once, for good");
      assertEquals(70, Fixtures.counter(store.read(A), "n"), "not applied twice");
    }
  }

  @Test
  void committingAPreparedPartRemovesItAndAbandoningDropsIt() {
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      store.prepare(new PreparedTransaction(7, A, List.of(new Operation.Increment("n", 1)))).join();
      store.commitPrepared(7, A, List.of(new Operation.Increment("n", 1))).join();
      store.prepare(new PreparedTransaction(8, B, List.of(new Operation.Increment("n", 1)))).join();
      store.abandonPrepared(8, B);
      store.persistDecision(new DecidedTransaction(7, List.of(A))).join();
      store.forgetDecision(new DecidedTransaction(7, List.of(A)));
      store.checkpointNow(); // a barrier: every earlier task of every partition has run
    }
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      assertTrue(store.resolveInDoubtTransactions(NO_REDO).isEmpty());
      assertEquals(1, Fixtures.counter(store.read(A), "n"));
      assertEquals(0, Fixtures.counter(store.read(B), "n"));
    }
  }

  @Test
  void partsThatNeedARedoAreReEvaluatedInArrivalOrder() {
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      // Arrival 2 doubles the counter, arrival 1 adds 3: in arrival order 0 -> 3 -> 6.
      store.prepare(new PreparedTransaction(11, A, List.of(), new byte[] {'x', '2'}, 2)).join();
      store.prepare(new PreparedTransaction(10, A, List.of(), new byte[] {'+', '3'}, 1)).join();
      store.persistDecision(new DecidedTransaction(10, List.of(A))).join();
      store.persistDecision(new DecidedTransaction(11, List.of(A))).join();
    }
    try (RocksStore store = open(settings, System::currentTimeMillis)) {
      store.resolveInDoubtTransactions((part, state) -> {
        long current = Fixtures.counter(state, "n");
        long next = part.redo()[0] == 'x' ? current * (part.redo()[1] - '0')
            : current + (part.redo()[1] - '0');
        return List.of(new Operation.Increment("n", next - current));
      });
      assertEquals(6, Fixtures.counter(store.read(A), "n"));
    }
  }

  @Test
  void codecRoundTripsAndRejectsCorruption() {
    PreparedTransaction prepared = new PreparedTransaction(42, A,
        List.of(new Operation.Increment("n", -3), new Operation.DeleteKey("k")));
    assertEquals(prepared, Codec.decodePrepared(Codec.encodePrepared(prepared)));
    PreparedTransaction withRedo = new PreparedTransaction(44, B, List.of(), new byte[] {7, 1, 9}, 12);
    assertEquals(withRedo, Codec.decodePrepared(Codec.encodePrepared(withRedo)));
    DecidedTransaction decided = new DecidedTransaction(43, List.of(A, B));
    assertEquals(decided, Codec.decodeDecided(Codec.encodeDecided(decided)));
    byte[] bytes = Codec.encodeDecided(decided);
    bytes[5] ^= 1;
    assertThrows(CorruptDataException.class, () -> Codec.decodeDecided(bytes));
    assertThrows(CorruptDataException.class,
        () -> Codec.decodePrepared(Codec.encodeDecided(decided)), "type id is checked");
  }

  @Test
  void presumedAbortIgnoresADecisionThatDoesNotNameTheParticipant() {
    InDoubtResolution resolution = InDoubtResolution.of(
        List.of(new PreparedTransaction(5, A, List.of()), new PreparedTransaction(5, C, List.of())),
        List.of(new DecidedTransaction(5, List.of(A, B))));
    assertEquals(List.of(A), resolution.toCommit().stream().map(PreparedTransaction::entity).toList());
    assertEquals(List.of(C), resolution.toAbort().stream().map(PreparedTransaction::entity).toList());
  }
}
