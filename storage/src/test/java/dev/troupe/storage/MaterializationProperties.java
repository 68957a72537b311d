package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * readAt against an independent replay: random operations on a few entities are committed through
 * the store; the test keeps its own list of committed records and replays it with
 * {@link EntityState#apply}. Checked with full history, after checkpoints and truncation (exact at
 * and above the horizon, history_truncated below it), and after close and reopen.
 */
class MaterializationProperties {
  private static final List<EntityId> ENTITIES =
      List.of(new EntityId("Item", "a"), new EntityId("Item", "b"), new EntityId("Order", "c"));
  private static final List<String> KEYS = List.of("x", "y", "z");
  private static final int DC = 1;

  /** One operation, before it is bound to a transaction and the current state. */
  record OperationSpec(int kind, int key, long number, int element) {}

  sealed interface Step permits CommitStep, CheckpointStep {}

  record CommitStep(int entity, List<OperationSpec> operations, int advanceMillis) implements Step {}

  record CheckpointStep() implements Step {}

  /** What the test knows was committed. */
  record CommittedRecord(EntityId entity, long timestamp, List<Operation> operations) {}

  @Property(tries = 50)
  void readAtEqualsTheReplayOfTheJournal(
      @ForAll("steps") List<Step> steps, @ForAll boolean pinWholeHistory) {
    Path directory = Fixtures.createTempDirectory();
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings =
        Fixtures.settings(directory).withCheckpoints(3, 1_000_000, 4).withHistoryRetentionMillis(0);
    List<CommittedRecord> committed = new ArrayList<>();
    try {
      RocksStore store = RocksStore.open(settings, clock);
      try {
        Store.Snapshot pin = pinWholeHistory ? store.pinSnapshot(0) : null;
        for (Step step : steps) {
          switch (step) {
            case CommitStep commit -> {
              clock.advance(commit.advanceMillis());
              EntityId entity = ENTITIES.get(commit.entity());
              EntityState before = replay(committed, entity, Long.MAX_VALUE);
              long transactionId = store.newTransactionId();
              List<Operation> operations = bind(commit.operations(), before, transactionId);
              Committed receipt =
                  store.commit(transactionId, List.of(new EntityWrite(entity, operations))).join();
              assertEquals(transactionId, receipt.transactionId());
              committed.add(new CommittedRecord(entity, receipt.commitTimestamp(), operations));
              // Read-your-writes through the cache.
              assertEquals(replay(committed, entity, Long.MAX_VALUE), store.read(entity));
            }
            case CheckpointStep ignored -> {
              clock.advance(5);
              store.checkpointNow();
            }
          }
        }
        if (pin != null) {
          // Nothing could be truncated: every version is readable and exact.
          for (int p = 0; p < settings.partitions(); p++) {
            assertEquals(0, store.historyHorizon(p));
          }
          verifyAll(store, committed, new long[settings.partitions()]);
          pin.close();
        }
        clock.advance(5);
        store.checkpointNow();
        long[] horizons = expectedHorizons(store, committed, settings.partitions());
        for (int p = 0; p < settings.partitions(); p++) {
          assertEquals(horizons[p], store.historyHorizon(p), "horizon of partition " + p);
        }
        verifyAll(store, committed, horizons);
        assertEquals(0, store.statistics().journalRecordsRetained());
      } finally {
        store.close();
      }
      long lastTimestamp = committed.stream().mapToLong(CommittedRecord::timestamp).max().orElse(0);
      // The physical clock went backwards meanwhile: timestamps must still increase.
      clock.advance(-1000);
      try (RocksStore reopened = RocksStore.open(settings, clock)) {
        long[] horizons = expectedHorizons(reopened, committed, settings.partitions());
        for (int p = 0; p < settings.partitions(); p++) {
          assertEquals(horizons[p], reopened.historyHorizon(p));
        }
        verifyAll(reopened, committed, horizons);
        for (EntityId entity : ENTITIES) {
          assertEquals(replay(committed, entity, Long.MAX_VALUE), reopened.read(entity));
        }
        assertTrue(reopened.currentTimestamp() >= lastTimestamp);
        long transactionId = reopened.newTransactionId();
        assertTrue(transactionId > lastTimestamp);
        Committed next =
            reopened
                .commit(
                    transactionId,
                    List.of(Fixtures.write(ENTITIES.get(0), new Operation.Increment("x", 1))))
                .join();
        assertTrue(next.commitTimestamp() > transactionId);
      }
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }

  /** The horizon after a final forced checkpoint with retention 0: the partition's last commit. */
  private static long[] expectedHorizons(Store store, List<CommittedRecord> committed, int partitions) {
    long[] horizons = new long[partitions];
    for (CommittedRecord record : committed) {
      int p = store.partitionOf(record.entity());
      horizons[p] = Math.max(horizons[p], record.timestamp());
    }
    return horizons;
  }

  private static void verifyAll(Store store, List<CommittedRecord> committed, long[] horizons) {
    TreeSet<Long> candidates = new TreeSet<>();
    candidates.add(0L);
    candidates.add(store.currentTimestamp());
    for (long horizon : horizons) {
      candidates.add(horizon);
      candidates.add(Math.max(0, horizon - 1));
    }
    for (CommittedRecord record : committed) {
      candidates.add(record.timestamp() - 1);
      candidates.add(record.timestamp());
      candidates.add(Math.min(store.currentTimestamp(), record.timestamp() + 1));
    }
    for (EntityId entity : ENTITIES) {
      long horizon = horizons[store.partitionOf(entity)];
      for (long timestamp : candidates) {
        if (timestamp >= horizon) {
          assertEquals(
              replay(committed, entity, timestamp),
              store.readAt(entity, timestamp),
              entity + " at " + timestamp);
        } else {
          TroupeException e =
              assertThrows(TroupeException.class, () -> store.readAt(entity, timestamp));
          assertEquals(ErrorCode.HISTORY_TRUNCATED, e.code());
        }
      }
    }
  }

  /** The independent materializer: the entity's committed records up to the timestamp, in order. */
  static EntityState replay(List<CommittedRecord> committed, EntityId entity, long timestamp) {
    EntityState state = EntityState.ABSENT;
    for (CommittedRecord record : committed) {
      if (record.entity().equals(entity) && record.timestamp() <= timestamp) {
        state = state.apply(record.operations(), record.timestamp(), DC);
      }
    }
    return state;
  }

  /** Turns specs into operations: adds get unique tags, removes observe the current tags. */
  private static List<Operation> bind(
      List<OperationSpec> specs, EntityState current, long transactionId) {
    List<Operation> operations = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      OperationSpec spec = specs.get(i);
      String key = KEYS.get(spec.key());
      JsonNode element = Json.parse(spec.element() % 2 == 0 ? "" + spec.element() : "\"e" + spec.element() + "\"");
      EntityState sofar =
          operations.isEmpty() ? current : current.apply(operations, current.version() + 1, DC);
      Operation operation =
          switch (spec.kind()) {
            case 0 -> new Operation.Assign(key, Json.parse("{\"n\":" + spec.number() + "}"));
            case 1 -> new Operation.DeleteKey(key);
            case 2, 3 -> new Operation.Increment(key, spec.number());
            case 4, 5 -> new Operation.AddElement(key, element, new Tag(DC, transactionId, i));
            case 6 -> {
              Set<Tag> observed =
                  sofar.get(key) instanceof SetValue set ? set.tagsOf(element) : Set.of();
              yield new Operation.RemoveElement(key, element, observed);
            }
            default -> new Operation.DeleteEntity();
          };
      operations.add(operation);
    }
    return operations;
  }

  @Provide
  Arbitrary<List<Step>> steps() {
    Arbitrary<OperationSpec> operation =
        Combinators.combine(
                Arbitraries.integers().between(0, 7),
                Arbitraries.integers().between(0, KEYS.size() - 1),
                Arbitraries.longs().between(-5, 5),
                Arbitraries.integers().between(0, 3))
            .as(OperationSpec::new);
    Arbitrary<Step> commit =
        Combinators.combine(
                Arbitraries.integers().between(0, ENTITIES.size() - 1),
                operation.list().ofMinSize(1).ofMaxSize(3),
                Arbitraries.frequency(Tuple.of(3, 0), Tuple.of(1, 1), Tuple.of(1, 2)))
            .as(CommitStep::new);
    Arbitrary<Step> checkpoint = Arbitraries.just(new CheckpointStep());
    return Arbitraries.frequencyOf(Tuple.of(10, commit), Tuple.of(1, checkpoint))
        .list()
        .ofMinSize(1)
        .ofMaxSize(30);
  }
}
