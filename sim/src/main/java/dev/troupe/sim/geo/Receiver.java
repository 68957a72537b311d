package dev.troupe.sim.geo;

import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.List;

/**
 * What the simulated data centre's shell needs of the causal receiver: the calls the runtime's
 * replication shell makes on {@code dev.troupe.replication.ReceiverCore}, so the simulation drives
 * the production core ({@link ReceiverCoreAdapter}) through one narrow seam.
 */
interface Receiver {
  /** One pull to send: {@code originDc}'s entries after {@code afterTimestamp}. */
  record Pull(int originDc, long afterTimestamp) {}

  /**
   * A remote transaction to apply now, atomically: one part per entity, with its origin stamp.
   *
   * @param transactionTimestamp its first log entry's timestamp (the marker's value)
   */
  record Transaction(int originDc, long transactionTimestamp, List<Part> parts) {
    record Part(EntityId entity, long stampTimestamp, List<Operation> operations) {}

    long timestamp() {
      return transactionTimestamp;
    }
  }

  /** The pulls to send to {@code peerDc} now. */
  List<Pull> pullsFrom(int peerDc, long nowMillis);

  /** A batch from {@code fromDc}, durable in the log; {@code peerReceived} its reported vector. */
  void received(int fromDc, ReplicationBatch batch, DependencyVector peerReceived,
      long nowMillis);

  /** A peer reported its received vector (with a pull it sent us). */
  void peerReported(int peerDc, DependencyVector peerReceived);

  /**
   * The transactions that may start applying now; the applying vector is raised for them before
   * they are returned (the shell publishes it before applying).
   */
  List<Transaction> ready(long nowMillis);

  /** A transaction returned by {@link #ready} is applied (durably). */
  void applied(Transaction transaction, long nowMillis);

  /** The local origin's safe timestamp advanced (the own entry of the received vector). */
  void localSafe(long timestamp);

  DependencyVector receivedVector();

  DependencyVector appliedVector();

  DependencyVector applyingVector();

  DependencyVector stableVector();

  /** Per origin, entries at or below it may be truncated. */
  DependencyVector truncationBound();

  /** Remote transactions received and not yet applied. */
  int pending();
}
