package dev.troupe.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.ReceiverCore.Effect;
import dev.troupe.replication.ReceiverCore.Input;
import dev.troupe.replication.ReplicationMutations.Mutation;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** ReceiverCore's rules one at a time, with this DC (A) and two peers (B, C). */
class ReceiverCoreTest {
  static final int A = 1;
  static final int B = 2;
  static final int C = 3;
  static final EntityId X = new EntityId("Item", "x");
  static final EntityId Y = new EntityId("Item", "y");
  static final EntityId Z = new EntityId("Item", "z");
  static final ReceiverLimits LIMITS = new ReceiverLimits(4, 1000, 50, 0, 0);

  static ReceiverCore core(ReceiverLimits limits, Mutation... mutations) {
    ReceiverCore core = new ReceiverCore(A, List.of(B, C), limits, Set.of(mutations));
    core.handle(new Input.RecoveredEntries(DependencyVector.EMPTY, DependencyVector.EMPTY,
        List.of()), 0);
    return core;
  }

  static DependencyVector vector(Object... dcAndTimestamp) {
    java.util.TreeMap<Integer, Long> entries = new java.util.TreeMap<>();
    for (int i = 0; i < dcAndTimestamp.length; i += 2) {
      entries.put((Integer) dcAndTimestamp[i], ((Number) dcAndTimestamp[i + 1]).longValue());
    }
    return new DependencyVector(entries);
  }

  static ReplicationEntry.Part part(int origin, long timestamp, long transactionId,
      EntityId entity, DependencyVector dependencies) {
    return new ReplicationEntry.Part(origin, timestamp, transactionId, 0, entity,
        List.of(new Operation.Increment("n", timestamp)), dependencies);
  }

  static ReplicationEntry.Part part(int origin, long timestamp, EntityId entity) {
    return part(origin, timestamp, timestamp, entity, DependencyVector.EMPTY);
  }

  static ReplicationEntry.Decision decision(int origin, long timestamp, long transactionId,
      List<EntityId> participants, DependencyVector dependencies) {
    return new ReplicationEntry.Decision(origin, timestamp, transactionId, 0, participants,
        dependencies);
  }

  /** Receives a batch from {@code peer} and persists what the core asks to persist. */
  static List<Effect> deliver(ReceiverCore core, int peer, ReplicationBatch batch, long now) {
    List<Effect> effects = new ArrayList<>();
    for (Effect effect : core.handle(new Input.BatchReceived(peer, batch), now)) {
      if (effect instanceof Effect.PersistBatch persist) {
        effects.addAll(core.handle(new Input.BatchPersisted(persist.peerDc(), persist.batch()),
            now));
      } else {
        effects.add(effect);
      }
    }
    return effects;
  }

  static List<Effect> deliver(ReceiverCore core, int origin, long upTo,
      ReplicationEntry... entries) {
    return deliver(core, origin, new ReplicationBatch(origin, List.of(entries), upTo), 0);
  }

  static List<RemoteTransaction> applications(List<Effect> effects) {
    List<RemoteTransaction> applied = new ArrayList<>();
    for (Effect effect : effects) {
      if (effect instanceof Effect.ApplyTransaction apply) {
        applied.add(apply.transaction());
      }
    }
    return applied;
  }

  static List<Long> timestamps(List<Effect> effects) {
    return applications(effects).stream().map(RemoteTransaction::transactionTimestamp).toList();
  }

  static List<Effect> applied(ReceiverCore core, RemoteTransaction transaction) {
    return core.handle(new Input.TransactionApplied(transaction), 0);
  }

  @Test
  void anOriginsTransactionsAreAppliedInOrderAndTheAppliedVectorFollows() {
    ReceiverCore core = core(new ReceiverLimits(1, 1000, 50, 0, 0));
    List<Effect> effects = deliver(core, B, 25, part(B, 10, X), part(B, 20, Y));
    assertEquals(List.of(10L), timestamps(effects));
    assertEquals(25, core.receivedVector().get(B));
    assertEquals(9, core.appliedVector().get(B));
    List<Effect> next = applied(core, applications(effects).get(0));
    assertEquals(List.of(20L), timestamps(next));
    assertEquals(19, core.appliedVector().get(B));
    applied(core, applications(next).get(0));
    assertEquals(25, core.appliedVector().get(B));
    assertEquals(0, core.pendingTransactions(B));
  }

  @Test
  void theApplyingVectorIsPublishedBeforeTheApplicationAndCoversIt() {
    ReceiverCore core = core(LIMITS);
    List<Effect> effects = deliver(core, B, 25, part(B, 10, X));
    effects = new java.util.ArrayList<>(effects);
    effects.addAll(deliver(core, C, 20, part(C, 20, Y)));
    int publish = -1;
    for (int i = 0; i < effects.size(); i++) {
      if (effects.get(i) instanceof Effect.PublishApplyingVector vector) {
        publish = i;
        assertTrue(vector.applying().get(B) == 10 || vector.applying().get(C) == 20);
      }
      if (effects.get(i) instanceof Effect.ApplyTransaction) {
        assertTrue(publish >= 0 && publish < i, "published before every application");
      }
    }
    assertEquals(2, applications(effects).size());
    assertTrue(core.applyingVector().covers(vector(B, 10, C, 20)));
  }

  @Test
  void oneTransactionOfAnOriginIsInFlightAtATimeAndOriginsRunInParallel() {
    ReceiverCore core = core(new ReceiverLimits(4, 1000, 50, 0, 0));
    List<Effect> fromB = deliver(core, B, 20, part(B, 10, X), part(B, 20, Y));
    assertEquals(List.of(10L), timestamps(fromB),
        "20 waits for 10: on another entity it could become visible first");
    List<Effect> fromC = deliver(core, C, 5, part(C, 5, Z));
    assertEquals(List.of(5L), timestamps(fromC), "another origin's transaction runs beside it");
    assertEquals(List.of(), timestamps(deliver(core, C, 6, part(C, 6, X))),
        "never two on one entity, whatever their origins");
    assertEquals(List.of(20L), timestamps(applied(core, applications(fromB).get(0))),
        "C's 6 still waits behind C's 5");
    assertEquals(List.of(6L), timestamps(applied(core, applications(fromC).get(0))));
    assertEquals(2, core.transactionsInFlight());
  }

  @Test
  void brokenToPipelineAnOriginItStillNeverRunsTwoOnOneEntity() {
    ReceiverCore core = core(new ReceiverLimits(2, 1000, 50, 0, 0),
        Mutation.PIPELINE_WITHIN_ORIGIN);
    List<Effect> effects = deliver(core, B, 40,
        part(B, 10, X), part(B, 20, Y), part(B, 30, X), part(B, 40, Z));
    assertEquals(List.of(10L, 20L), timestamps(effects));
    // 30 (on x) waits for 10; 40 waits behind 30 (origin order), even with a free slot.
    List<Effect> afterTwenty = applied(core, applications(effects).get(1));
    assertEquals(List.of(), timestamps(afterTwenty));
    List<Effect> afterTen = applied(core, applications(effects).get(0));
    assertEquals(List.of(30L, 40L), timestamps(afterTen));
    assertEquals(2, core.transactionsInFlight());
  }

  @Test
  void theLimitOfTransactionsInFlightHolds() {
    ReceiverCore core = core(new ReceiverLimits(1, 1000, 50, 0, 0));
    List<Effect> fromB = deliver(core, B, 30, part(B, 10, X), part(B, 20, Y));
    assertEquals(List.of(10L), timestamps(fromB));
    assertEquals(List.of(), timestamps(deliver(core, C, 30, part(C, 10, Z))),
        "one in flight: C's waits for the slot");
    assertEquals(1, applications(applied(core, applications(fromB).get(0))).size(),
        "the slot freed: one of B's 20 and C's 10 goes");
    assertEquals(1, core.transactionsInFlight());
  }

  @Test
  void aTransactionWaitsForItsDependenciesFromAThirdDataCentre() {
    ReceiverCore core = core(LIMITS);
    // C's transaction at 5 saw B's transaction at 10 (C's applying vector had B at 10).
    List<Effect> fromC = deliver(core, C, 5, part(C, 5, 5, Y, vector(B, 10, A, 77)));
    assertEquals(List.of(), timestamps(fromC), "B's transaction 10 is not applied here yet");
    List<Effect> fromB = deliver(core, B, 9, part(B, 8, X));
    assertEquals(List.of(8L), timestamps(fromB));
    assertEquals(List.of(), timestamps(applied(core, applications(fromB).get(0))),
        "applied B is 9, below 10");
    List<Effect> more = deliver(core, B, 12, part(B, 10, X));
    List<RemoteTransaction> tenth = applications(more);
    assertEquals(List.of(10L), timestamps(more));
    assertEquals(List.of(5L), timestamps(applied(core, tenth.get(0))),
        "now applied B is 12, covering 10 (A's own entry 77 needs nothing)");
  }

  @Test
  void aMultiEntityTransactionIsAppliedWithAllItsPartsAtOnceAndAlone() {
    ReceiverCore core = core(LIMITS);
    List<Effect> first = deliver(core, B, 11, part(B, 5, Z),
        decision(B, 10, 99, List.of(X, Y), vector(C, 3)), part(B, 11, 99, X, vector(C, 4)));
    assertEquals(List.of(5L), timestamps(first));
    assertEquals(4, core.appliedVector().get(B), "the transaction at 5 is in flight");
    RemoteTransaction five = applications(first).get(0);
    assertEquals(List.of(), timestamps(deliver(core, B, 13, part(B, 12, 12, Z,
        DependencyVector.EMPTY), part(B, 13, 99, Y, vector(C, 2)))),
        "C is not applied to 4 yet, and the transaction at 5 is in flight");
    assertEquals(List.of(), timestamps(deliver(core, C, 4)), "5 is still in flight");
    List<Effect> afterFive = applied(core, five);
    List<RemoteTransaction> multi = applications(afterFive);
    assertEquals(1, multi.size());
    RemoteTransaction transaction = multi.get(0);
    assertEquals(10, transaction.transactionTimestamp());
    assertEquals(99, transaction.transactionId());
    assertEquals(List.of(X, Y), transaction.parts().stream().map(RemoteTransaction.Part::entity)
        .toList());
    assertEquals(List.of(11L, 13L), transaction.parts().stream()
        .map(RemoteTransaction.Part::stampTimestamp).toList());
    assertEquals(vector(C, 4), transaction.dependencies());
    assertTrue(transaction.isMultiEntity());
    // Nothing follows the multi-entity transaction until it is applied (12, on z, is free).
    assertEquals(List.of(12L), timestamps(applied(core, transaction)));
  }

  @Test
  void duplicatedAndOverlappingBatchesApplyEachTransactionOnce() {
    ReceiverCore core = core(LIMITS);
    ReplicationBatch batch = new ReplicationBatch(B, List.of(part(B, 10, X), part(B, 20, Y)), 20);
    List<Effect> first = deliver(core, B, batch, 0);
    assertEquals(List.of(10L), timestamps(first));
    assertEquals(List.of(), core.handle(new Input.BatchReceived(B, batch), 0),
        "nothing new: not even persisted");
    // The same entries forwarded by C, overlapping with a new one.
    List<Effect> forwarded = core.handle(new Input.BatchReceived(C, new ReplicationBatch(B,
        List.of(part(B, 20, Y), part(B, 30, Z)), 30)), 0);
    assertEquals(1, forwarded.size());
    Effect.PersistBatch persist = (Effect.PersistBatch) forwarded.get(0);
    assertEquals(List.of(30L), persist.batch().entries().stream()
        .map(ReplicationEntry::timestamp).toList());
    // Persisted twice (two pulls in flight): taken once.
    assertEquals(List.of(), timestamps(core.handle(new Input.BatchPersisted(C,
        persist.batch()), 0)), "30 waits behind 10 and 20");
    assertEquals(List.of(), timestamps(core.handle(new Input.BatchPersisted(C,
        persist.batch()), 0)));
    List<Effect> afterTen = applied(core, applications(first).get(0));
    assertEquals(List.of(), timestamps(applied(core, applications(first).get(0))),
        "a duplicate report is ignored");
    assertEquals(List.of(20L), timestamps(afterTen));
    List<Effect> afterTwenty = applied(core, applications(afterTen).get(0));
    assertEquals(List.of(30L), timestamps(afterTwenty), "30 taken once, though persisted twice");
    assertEquals(1, core.pendingTransactions(B));
    assertEquals(1, core.transactionsInFlight());
  }

  @Test
  void heartbeatsAdvanceAnIdleOriginButNotPastAPendingTransaction() {
    ReceiverCore core = core(LIMITS);
    deliver(core, B, 100);
    assertEquals(100, core.appliedVector().get(B));
    deliver(core, B, 150, decision(B, 120, 7, List.of(X, Y), DependencyVector.EMPTY),
        part(B, 121, 7, X, DependencyVector.EMPTY));
    assertEquals(150, core.receivedVector().get(B));
    assertEquals(119, core.appliedVector().get(B), "the transaction at 120 lacks a part");
    List<Effect> rest = deliver(core, B, 200, part(B, 160, 7, Y, DependencyVector.EMPTY));
    assertEquals(List.of(120L), timestamps(rest));
    applied(core, applications(rest).get(0));
    assertEquals(200, core.appliedVector().get(B));
  }

  @Test
  void aFailedApplicationIsEmittedAgainAfterTheRetryDelay() {
    ReceiverCore core = core(LIMITS);
    RemoteTransaction transaction = applications(deliver(core, B, 10, part(B, 10, X))).get(0);
    assertEquals(List.of(), timestamps(core.handle(
        new Input.ApplicationFailed(transaction, "timeout"), 1000)));
    assertEquals(List.of(), timestamps(core.handle(new Input.Tick(), 1049)));
    assertEquals(List.of(10L), timestamps(core.handle(new Input.Tick(), 1050)));
    assertEquals(List.of(), timestamps(core.handle(new Input.Tick(), 2000)));
    applied(core, transaction);
    assertEquals(10, core.appliedVector().get(B));
  }

  @Test
  void anotherOriginIsPulledThroughAPeerAfterItsLinkStalledOrFailed() {
    ReceiverCore core = new ReceiverCore(A, List.of(B, C), LIMITS);
    core.handle(new Input.RecoveredEntries(DependencyVector.EMPTY, DependencyVector.EMPTY,
        List.of()), 1000);
    deliver(core, B, new ReplicationBatch(B, List.of(), 40), 1000);
    assertEquals(List.of(new PullRequest(B, 40)), core.pullsFrom(B, 1500));
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 1500));
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 2000),
        "C has not reported anything of B beyond 40");
    core.handle(new Input.PeerReported(C, vector(B, 90, C, 500)), 1500);
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 1999), "not stalled yet");
    assertEquals(List.of(new PullRequest(C, 0), new PullRequest(B, 40)),
        core.pullsFrom(C, 2000), "B's received entry stood still for forward-after-millis");
    // B answers again: its entry advances, forwarding stops.
    deliver(core, B, new ReplicationBatch(B, List.of(), 60), 2100);
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 2200));
    // A failed link forwards at once; a live answer from B ends it.
    core.handle(new Input.LinkFailed(B), 2200);
    assertEquals(List.of(new PullRequest(C, 0), new PullRequest(B, 60)),
        core.pullsFrom(C, 2200));
    assertEquals(List.of(new PullRequest(B, 60)), core.pullsFrom(B, 2200),
        "the origin itself is always asked");
    core.handle(new Input.LinkFailed(C), 2200);
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 2200),
        "a peer whose link failed forwards nothing");
    assertEquals(List.of(), core.pullsFrom(77, 2200));
  }

  @Test
  void theStableVectorIsTheMinimumOverEveryDataCentreAndBoundsTruncation() {
    ReceiverCore core = core(LIMITS);
    RemoteTransaction ten = applications(deliver(core, B, 30, part(B, 10, X))).get(0);
    assertEquals(vector(A, 0, B, 0, C, 0), core.stableVector(), "no peer reported");
    core.handle(new Input.PeerReported(C, vector(A, 70, B, 25)), 0);
    assertEquals(vector(B, 25), core.stableVector(), "B never reported: A's and C's are 0");
    List<Effect> reported = core.handle(new Input.PeerReported(B, vector(A, 50, C, 8)), 0);
    // A: min(B's 50, C's 70); B: min(A's 30, C's 25); C: min(A's 0, B's 8).
    assertEquals(vector(A, 50, B, 25, C, 0), core.stableVector());
    assertTrue(reported.contains(new Effect.Truncate(vector(A, 50, B, 9))),
        "B's entries above 9 are not applied: " + reported);
    List<Effect> afterApplied = applied(core, ten);
    assertTrue(afterApplied.contains(new Effect.RecordAppliedVector(vector(B, 30))));
    assertTrue(afterApplied.contains(new Effect.Truncate(vector(A, 50, B, 25))),
        "below the stable entry, not the applied one: " + afterApplied);
  }

  static final int D = 4;

  @Test
  void anAddedPeerCountsAsZeroInTheStableVectorUntilItReportsSoTruncationStalls() {
    ReceiverCore core = core(LIMITS);
    RemoteTransaction ten = applications(deliver(core, B, 30, part(B, 10, X))).get(0);
    applied(core, ten);
    core.handle(new Input.PeerReported(B, vector(A, 50, C, 40)), 0);
    core.handle(new Input.PeerReported(C, vector(A, 60, B, 30)), 0);
    assertEquals(vector(A, 50, B, 30, C, 0), core.stableVector());

    List<Effect> changed = core.handle(new Input.PeersChanged(Set.of(B, C, D)), 100);
    assertEquals(Set.of(B, C, D), core.peers());
    assertEquals(vector(A, 0, B, 0, C, 0, D, 0), core.stableVector(),
        "D never reported: it holds nothing of anyone, and nobody holds anything of D");
    assertTrue(changed.stream().noneMatch(effect -> effect instanceof Effect.Truncate),
        "no truncation past what the newcomer will ask for: " + changed);
    assertEquals(List.of(new PullRequest(D, 0)), core.pullsFrom(D, 100),
        "the newcomer's own entries are pulled from the start");
    assertEquals(0, core.receivedVector().get(D));

    // D reports: the stable vector moves again, bounded by what D holds.
    core.handle(new Input.PeerReported(D, vector(A, 20, B, 15, C, 5)), 100);
    deliver(core, D, 7);
    core.handle(new Input.PeerReported(B, vector(A, 50, C, 40, D, 7)), 100);
    core.handle(new Input.PeerReported(C, vector(A, 60, B, 30, D, 9)), 100);
    assertEquals(vector(A, 20, B, 15, C, 0, D, 7), core.stableVector(), "A holds nothing of C");
  }

  @Test
  void aRemovedPeerStopsHoldingTruncationBackAndIsNoLongerPulled() {
    ReceiverCore core = core(LIMITS);
    applied(core, applications(deliver(core, B, 30, part(B, 10, X))).get(0));
    core.handle(new Input.PeerReported(B, vector(A, 50, C, 40)), 0);
    assertEquals(vector(A, 0, B, 0, C, 0), core.stableVector(), "C never reported");

    List<Effect> changed = core.handle(new Input.PeersChanged(Set.of(B)), 10);
    assertEquals(Set.of(B), core.peers());
    assertEquals(vector(A, 50, B, 30), core.stableVector(), "only A and B hold entries now");
    assertTrue(changed.contains(new Effect.Truncate(vector(A, 50, B, 30))), changed.toString());
    assertEquals(List.of(), core.pullsFrom(C, 10));
    assertEquals(vector(B, 30), core.receivedVector(), "C is no longer an origin here");
    assertEquals(List.of(Effect.BatchRefused.class),
        core.handle(new Input.BatchReceived(C, new ReplicationBatch(C, List.of(), 5)), 10)
            .stream().map(Object::getClass).toList(), "C's batches are refused");
  }

  @Test
  void anApplicationInFlightOfARemovedOriginKeepsItsEntityUntilItCompletes() {
    ReceiverCore core = core(LIMITS);
    RemoteTransaction ofC = applications(deliver(core, C, 10, part(C, 10, X))).get(0);
    core.handle(new Input.PeersChanged(Set.of(B)), 10);
    assertEquals(1, core.transactionsInFlight());
    assertEquals(List.of(), timestamps(deliver(core, B, 20, part(B, 20, X))),
        "X is still being written by C's transaction");
    assertEquals(List.of(20L), timestamps(applied(core, ofC)));
  }

  @Test
  void aReAddedPeerStartsFromZero() {
    ReceiverCore core = core(LIMITS);
    applied(core, applications(deliver(core, C, 10, part(C, 10, X))).get(0));
    core.handle(new Input.PeersChanged(Set.of(B)), 10);
    core.handle(new Input.PeersChanged(Set.of(B, C)), 20);
    assertEquals(List.of(new PullRequest(C, 0)), core.pullsFrom(C, 20));
    assertEquals(List.of(10L), timestamps(deliver(core, C, 10, part(C, 10, X))),
        "applied again: its marker makes it a no-op");
  }

  @Test
  void truncationBeforeStableIsAMutation() {
    ReceiverCore core = core(LIMITS, Mutation.TRUNCATE_BEFORE_STABLE);
    RemoteTransaction ten = applications(deliver(core, B, 30, part(B, 10, X))).get(0);
    assertTrue(applied(core, ten).contains(new Effect.Truncate(vector(B, 30))));
  }

  @Test
  void recordsAndTruncationsAreThrottled() {
    ReceiverCore core = core(new ReceiverLimits(4, 1000, 50, 100, 100));
    core.handle(new Input.PeerReported(B, vector(A, 5, C, 100)), 0);
    core.handle(new Input.PeerReported(C, vector(A, 5, B, 100)), 0);
    List<Effect> first = deliver(core, B, new ReplicationBatch(B, List.of(), 10), 0);
    assertTrue(first.contains(new Effect.RecordAppliedVector(vector(B, 10))), first.toString());
    List<Effect> second = deliver(core, B, new ReplicationBatch(B, List.of(), 20), 50);
    assertFalse(second.stream().anyMatch(e -> e instanceof Effect.RecordAppliedVector));
    assertFalse(second.stream().anyMatch(e -> e instanceof Effect.Truncate));
    List<Effect> later = core.handle(new Input.Tick(), 100);
    assertTrue(later.contains(new Effect.RecordAppliedVector(vector(B, 20))), later.toString());
    assertTrue(later.contains(new Effect.Truncate(vector(A, 5, B, 20))), later.toString());
    assertTrue(later.indexOf(new Effect.RecordAppliedVector(vector(B, 20)))
        < later.indexOf(new Effect.Truncate(vector(A, 5, B, 20))), "record before truncate");
  }

  @Test
  void theRecordedAppliedVectorNeverCutsAnAppliedMultiEntityTransaction() {
    ReceiverCore core = core(LIMITS);
    List<Effect> effects = deliver(core, B, 13,
        decision(B, 10, 99, List.of(X, Y), DependencyVector.EMPTY),
        part(B, 11, 11, Z, DependencyVector.EMPTY),
        part(B, 12, 99, X, DependencyVector.EMPTY),
        part(B, 13, 99, Y, DependencyVector.EMPTY));
    RemoteTransaction multi = applications(effects).get(0);
    List<Effect> afterMulti = applied(core, multi);
    assertEquals(10, core.appliedVector().get(B), "11 is in flight");
    assertTrue(effects.contains(new Effect.RecordAppliedVector(vector(B, 9))), effects.toString());
    assertFalse(afterMulti.stream().anyMatch(e -> e instanceof Effect.RecordAppliedVector),
        "10 would cut the transaction at 10 (parts at 12, 13): " + afterMulti);
    List<Effect> afterEleven = applied(core, applications(afterMulti).get(0));
    assertTrue(afterEleven.contains(new Effect.RecordAppliedVector(vector(B, 13))));
  }

  @Test
  void recoveryReFeedsTheLogAboveTheRecordedVectorAndRaisesTheApplyingVector() {
    ReceiverCore core = new ReceiverCore(A, List.of(B, C), LIMITS);
    List<ReplicationEntry> log = List.of(
        decision(B, 10, 99, List.of(X, Y), DependencyVector.EMPTY),
        part(B, 11, 11, Z, DependencyVector.EMPTY),
        part(B, 12, 99, X, DependencyVector.EMPTY),
        part(B, 13, 99, Y, DependencyVector.EMPTY),
        decision(B, 20, 98, List.of(X, Y), DependencyVector.EMPTY),
        part(B, 21, 98, X, DependencyVector.EMPTY),
        part(C, 3, Z));
    List<Effect> effects = core.handle(new Input.RecoveredEntries(vector(B, 21, C, 2),
        vector(B, 9, C, 2), log), 0);
    assertEquals(new Effect.PublishApplyingVector(vector(B, 11, C, 2)), effects.get(0),
        "every complete re-fed transaction may have been seen (20 is incomplete)");
    List<RemoteTransaction> applications = applications(effects);
    assertEquals(List.of(10L), timestamps(effects), "C's entry at 3 is above C's received 2");
    assertEquals(2, applications.get(0).parts().size());
    assertThrows(InvariantViolation.class, () -> core.handle(new Input.RecoveredEntries(
        DependencyVector.EMPTY, DependencyVector.EMPTY, List.of()), 0));
    assertEquals(List.of(11L), timestamps(applied(core, applications.get(0))));
  }

  @Test
  void batchesOfUnknownOriginsOrOfThisDataCentreAreRefused() {
    ReceiverCore core = core(LIMITS);
    List<Effect> own = core.handle(new Input.BatchReceived(B,
        new ReplicationBatch(A, List.of(part(A, 1, X)), 1)), 0);
    assertTrue(own.get(0) instanceof Effect.BatchRefused);
    List<Effect> stranger = core.handle(new Input.BatchReceived(B,
        new ReplicationBatch(9, List.of(), 1)), 0);
    assertTrue(stranger.get(0) instanceof Effect.BatchRefused);
    assertEquals(vector(), core.receivedVector());
  }

  @Test
  void applyingBeforeDependenciesIsAMutation() {
    ReceiverCore core = core(LIMITS, Mutation.APPLY_BEFORE_DEPENDENCIES);
    assertEquals(List.of(5L), timestamps(deliver(core, C, 5, part(C, 5, 5, Y, vector(B, 10)))));
  }

  @Test
  void splittingMultiEntityTransactionsIsAMutation() {
    ReceiverCore core = core(LIMITS, Mutation.SPLIT_MULTI_ENTITY_TRANSACTIONS);
    List<Effect> effects = deliver(core, B, 12,
        decision(B, 10, 99, List.of(X, Y), DependencyVector.EMPTY),
        part(B, 11, 99, X, DependencyVector.EMPTY));
    assertEquals(List.of(11L), timestamps(effects));
  }

  @Test
  void partsOfOneJournalRecordAreOneTransaction() {
    ReceiverCore core = core(LIMITS);
    ReplicationEntry.Part x = new ReplicationEntry.Part(B, 10, 5, 0, X, List.of(),
        DependencyVector.EMPTY);
    ReplicationEntry.Part y = new ReplicationEntry.Part(B, 10, 5, 1, Y, List.of(),
        DependencyVector.EMPTY);
    List<RemoteTransaction> applications = applications(deliver(core, B, 10, x, y));
    assertEquals(1, applications.size());
    assertTrue(applications.get(0).isMultiEntity());
  }
}
