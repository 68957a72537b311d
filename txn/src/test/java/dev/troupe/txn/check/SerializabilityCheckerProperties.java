package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import dev.troupe.txn.check.SerializabilityChecker.Result;
import dev.troupe.txn.check.SerializabilityChecker.Serializable;
import dev.troupe.txn.check.SerializabilityChecker.Violation;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.statistics.Statistics;

/**
 * The serializability checker against histories whose answer is known independently: serial
 * executions of a versioned store (always serializable, in any recording order), the same with
 * one read made stale (a lost update when the transaction also wrote the object, otherwise
 * whatever an exhaustive search of serial orders says), and small random histories, where the
 * checker must agree with that exhaustive search exactly.
 */
class SerializabilityCheckerProperties {

  /** How a generated transaction ends; for an unknown outcome, whether its writes took effect. */
  enum Fate { COMMITTED, ABORTED, UNKNOWN_APPLIED, UNKNOWN_NOT_APPLIED }

  /**
   * One transaction of a generated serial execution: bit j of a mask selects object j (of those
   * the execution uses).
   */
  record Plan(int readMask, int writeMask, Fate fate) {}

  /** A stale read to inject: transaction {@code position} reads {@code objectId} at a version. */
  record StaleRead(int position, String objectId, long version) {}

  @Provide
  Arbitrary<List<Plan>> executions() {
    return plans().list().ofMinSize(2).ofMaxSize(60);
  }

  @Provide
  Arbitrary<List<Plan>> shortExecutions() {
    return plans().list().ofMinSize(2).ofMaxSize(7);
  }

  @Provide
  Arbitrary<History> smallRandomHistories() {
    return Arbitraries.randoms().map(SerializabilityCheckerProperties::randomHistory);
  }

  private static Arbitrary<Plan> plans() {
    Arbitrary<Fate> fates = Arbitraries.frequencyOf(
        Tuple.of(7, Arbitraries.just(Fate.COMMITTED)),
        Tuple.of(1, Arbitraries.just(Fate.ABORTED)),
        Tuple.of(1, Arbitraries.just(Fate.UNKNOWN_APPLIED)),
        Tuple.of(1, Arbitraries.just(Fate.UNKNOWN_NOT_APPLIED)));
    return Combinators.combine(
            Arbitraries.integers().between(0, 255), Arbitraries.integers().between(0, 255), fates)
        .as(Plan::new);
  }

  @Property(tries = 500)
  void serialExecutionsAreSerializable(
      @ForAll @IntRange(min = 1, max = 8) int objects, @ForAll("executions") List<Plan> plans) {
    History history = execute(objects, plans).history();
    Serializable verdict =
        assertInstanceOf(Serializable.class, SerializabilityChecker.check(history));
    long committed = plans.stream().filter(plan -> plan.fate() == Fate.COMMITTED).count();
    long applied = plans.stream().filter(plan -> plan.fate() == Fate.UNKNOWN_APPLIED).count();
    assertTrue(verdict.transactionsChecked() >= committed, verdict::toString);
    assertTrue(verdict.transactionsChecked() <= committed + applied, verdict::toString);
  }

  @Property(tries = 200)
  void theRecordingOrderDoesNotChangeTheVerdict(
      @ForAll @IntRange(min = 1, max = 8) int objects,
      @ForAll("executions") List<Plan> plans,
      @ForAll long shuffleSeed) {
    History history = execute(objects, plans).history();
    List<RecordedTransaction> shuffled = new ArrayList<>(history.transactions());
    Collections.shuffle(shuffled, new Random(shuffleSeed));
    assertEquals(
        SerializabilityChecker.check(history),
        SerializabilityChecker.check(new History(shuffled)));
  }

  @Property(tries = 500)
  void aStaleReadInAReadModifyWriteIsAlwaysALostUpdate(
      @ForAll @IntRange(min = 1, max = 8) int objects,
      @ForAll("executions") List<Plan> plans,
      @ForAll @IntRange(min = 0, max = 1 << 20) int whichRead,
      @ForAll @IntRange(min = 0, max = 1 << 20) int whichVersion) {
    SerialStore store = execute(objects, plans);
    History history = store.history();
    Map<String, Outcome> writerOutcome = writerOutcomes(history);
    List<StaleRead> candidates = new ArrayList<>();
    List<SerialStore.Executed> executed = store.executed();
    for (int position = 0; position < executed.size(); position++) {
      RecordedTransaction transaction = executed.get(position).transaction();
      if (transaction.outcome() != Outcome.COMMITTED) {
        continue;
      }
      for (Map.Entry<String, List<Long>> read :
          executed.get(position).overwrittenBeforeRead().entrySet()) {
        String objectId = read.getKey();
        long current = transaction.reads().get(objectId);
        // The version read must stay committed once the read moves off it, so that it
        // separates the stale read from the write.
        boolean currentStaysCommitted =
            writerOutcome.get(objectId + "/" + current) == Outcome.COMMITTED;
        if (transaction.writes().containsKey(objectId) && currentStaysCommitted) {
          List<Long> older = read.getValue();
          candidates.add(new StaleRead(
              position, objectId, older.get(whichVersion % older.size())));
        }
      }
    }
    Assume.that(!candidates.isEmpty());
    StaleRead stale = candidates.get(whichRead % candidates.size());

    Violation violation = assertInstanceOf(
        Violation.class, SerializabilityChecker.check(withStaleRead(history, stale)));
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind(), violation::toString);
    assertTrue(violation.cycleOrEvidence().contains(
        history.transactions().get(stale.position()).id()), violation::toString);
  }

  @Property(tries = 1000)
  void aStaleReadIsReportedExactlyWhenNoSerialOrderExplainsIt(
      @ForAll @IntRange(min = 1, max = 4) int objects,
      @ForAll("shortExecutions") List<Plan> plans,
      @ForAll @IntRange(min = 0, max = 1 << 20) int whichRead,
      @ForAll @IntRange(min = 0, max = 1 << 20) int whichVersion) {
    SerialStore store = execute(objects, plans);
    List<StaleRead> candidates = new ArrayList<>();
    List<SerialStore.Executed> executed = store.executed();
    for (int position = 0; position < executed.size(); position++) {
      for (Map.Entry<String, List<Long>> read :
          executed.get(position).overwrittenBeforeRead().entrySet()) {
        List<Long> older = read.getValue();
        if (!older.isEmpty()) {
          candidates.add(new StaleRead(
              position, read.getKey(), older.get(whichVersion % older.size())));
        }
      }
    }
    Assume.that(!candidates.isEmpty());
    StaleRead stale = candidates.get(whichRead % candidates.size());
    History history = withStaleRead(store.history(), stale);

    Result verdict = SerializabilityChecker.check(history);
    boolean expected = ExhaustiveSerializability.isSerializable(history);
    Statistics.label("verdict").collect(expected ? "serializable" : "violation");
    Statistics.label("verdict").coverage(coverage -> {
      coverage.check("serializable").percentage(percent -> percent > 10);
      coverage.check("violation").percentage(percent -> percent > 10);
    });
    assertEquals(expected, verdict instanceof Serializable, () -> history + " -> " + verdict);
    if (verdict instanceof Violation violation) {
      // Every edge of the serial history points forward; only the stale read points back.
      assertTrue(violation.cycleOrEvidence().contains(
          history.transactions().get(stale.position()).id()), violation::toString);
    }
  }

  @Property(tries = 2000)
  void randomHistoriesAreJudgedLikeAnExhaustiveSearch(
      @ForAll("smallRandomHistories") History history) {
    Result verdict = SerializabilityChecker.check(history);
    boolean expected = ExhaustiveSerializability.isSerializable(history);
    Statistics.label("verdict").collect(switch (verdict) {
      case Serializable serializable -> "serializable";
      case Violation violation -> violation.kind();
    });
    Statistics.label("verdict").coverage(coverage -> {
      coverage.check("serializable").percentage(percent -> percent > 5);
      coverage.check(SerializabilityChecker.CYCLE_G0).count(count -> count > 0);
      coverage.check(SerializabilityChecker.CYCLE_G1C).count(count -> count > 0);
      coverage.check(SerializabilityChecker.CYCLE_G2).count(count -> count > 0);
      coverage.check(SerializabilityChecker.ABORTED_READ).count(count -> count > 0);
    });
    assertEquals(expected, verdict instanceof Serializable, () -> history + " -> " + verdict);
  }

  /** Runs the plans one by one against a store of {@code objects} objects named o0, o1, .... */
  static SerialStore execute(int objects, List<Plan> plans) {
    SerialStore store = new SerialStore();
    for (int position = 0; position < plans.size(); position++) {
      Plan plan = plans.get(position);
      Outcome outcome = switch (plan.fate()) {
        case COMMITTED -> Outcome.COMMITTED;
        case ABORTED -> Outcome.ABORTED;
        case UNKNOWN_APPLIED, UNKNOWN_NOT_APPLIED -> Outcome.UNKNOWN;
      };
      store.run("T" + position, outcome, plan.fate() == Fate.UNKNOWN_APPLIED,
          objectsOf(plan.readMask(), objects), objectsOf(plan.writeMask(), objects));
    }
    return store;
  }

  private static List<String> objectsOf(int mask, int objects) {
    List<String> selected = new ArrayList<>();
    for (int object = 0; object < objects; object++) {
      if ((mask & 1 << object) != 0) {
        selected.add("o" + object);
      }
    }
    return selected;
  }

  private static Map<String, Outcome> writerOutcomes(History history) {
    Map<String, Outcome> outcomes = new HashMap<>();
    for (RecordedTransaction transaction : history.transactions()) {
      transaction.writes().forEach((objectId, version) ->
          outcomes.put(objectId + "/" + version, transaction.outcome()));
    }
    return outcomes;
  }

  private static History withStaleRead(History history, StaleRead stale) {
    List<RecordedTransaction> transactions = new ArrayList<>(history.transactions());
    RecordedTransaction original = transactions.get(stale.position());
    Map<String, Long> reads = new TreeMap<>(original.reads());
    reads.put(stale.objectId(), stale.version());
    transactions.set(stale.position(), new RecordedTransaction(
        original.id(), original.outcome(), reads, original.writes()));
    return new History(transactions);
  }

  /**
   * Up to six transactions over up to three objects, with random outcomes, versions in an order
   * unrelated to the transactions' and reads of any version of the object (mostly written ones,
   * sometimes the initial one, rarely one nobody wrote or the transaction's own).
   */
  static History randomHistory(Random random) {
    int transactionCount = 1 + random.nextInt(6);
    int objectCount = 1 + random.nextInt(3);
    List<Map<String, Long>> writes = new ArrayList<>();
    for (int position = 0; position < transactionCount; position++) {
      writes.add(new TreeMap<>());
    }
    List<List<Long>> versionsOfObject = new ArrayList<>();
    for (int object = 0; object < objectCount; object++) {
      List<Integer> writers = new ArrayList<>();
      for (int position = 0; position < transactionCount; position++) {
        if (random.nextInt(10) < 4) {
          writers.add(position);
        }
      }
      List<Long> versions = new ArrayList<>();
      for (long version = 1; version <= writers.size(); version++) {
        versions.add(version);
      }
      Collections.shuffle(versions, random);
      for (int slot = 0; slot < writers.size(); slot++) {
        writes.get(writers.get(slot)).put("o" + object, versions.get(slot));
      }
      versionsOfObject.add(versions);
    }
    List<RecordedTransaction> transactions = new ArrayList<>();
    for (int position = 0; position < transactionCount; position++) {
      Map<String, Long> reads = new TreeMap<>();
      for (int object = 0; object < objectCount; object++) {
        if (random.nextBoolean()) {
          List<Long> versions = versionsOfObject.get(object);
          Long ownVersion = writes.get(position).get("o" + object);
          long version;
          do {
            int choice = random.nextInt(versions.size() + 2);
            version = choice < versions.size() ? versions.get(choice)
                : choice == versions.size() ? 0
                : random.nextInt(20) == 0 ? versions.size() + 1 : 0;
            // Reading one's own write is a violation of its own; keep it rare.
          } while (ownVersion != null && version == ownVersion && random.nextInt(8) != 0);
          reads.put("o" + object, version);
        }
      }
      int outcomeRoll = random.nextInt(20);
      Outcome outcome = outcomeRoll < 14 ? Outcome.COMMITTED
          : outcomeRoll < 17 ? Outcome.ABORTED : Outcome.UNKNOWN;
      transactions.add(new RecordedTransaction("T" + position, outcome, reads,
          writes.get(position)));
    }
    return new History(transactions);
  }
}
