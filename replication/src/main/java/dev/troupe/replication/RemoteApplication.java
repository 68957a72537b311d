package dev.troupe.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link ReceiverCore} emits for application: a run of consecutive transactions of one origin
 * (T1..Tk in its order, every one ready), applied atomically as one local transaction, so all of
 * them become visible here together (docs/ARCHITECTURE.md, "Batched application"). Each entity
 * takes the {@linkplain #segmentsByEntity segments} of every transaction touching it, in the
 * origin's order; touching one entity it is one turn, several one dynamic transaction.
 *
 * @param transactions at least one, of {@code originDc}, in its order (increasing places)
 */
public record RemoteApplication(int originDc, List<RemoteTransaction> transactions) {
  public RemoteApplication {
    transactions = List.copyOf(transactions);
    Invariants.check(!transactions.isEmpty(), "an application of DC %s with no transaction",
        originDc);
    for (int i = 0; i < transactions.size(); i++) {
      RemoteTransaction transaction = transactions.get(i);
      Invariants.check(transaction.originDc() == originDc,
          "an application of DC %s holds a transaction of DC %s", originDc,
          transaction.originDc());
      Invariants.check(i == 0 || transactions.get(i - 1).transactionTimestamp()
              < transaction.transactionTimestamp(),
          "the transactions of an application of DC %s are not in its order", originDc);
    }
  }

  /** The application of one transaction alone. */
  public static RemoteApplication of(RemoteTransaction transaction) {
    return new RemoteApplication(transaction.originDc(), List.of(transaction));
  }

  /** One transaction's part on an entity, as the application carries it. */
  public record Segment(long transactionTimestamp, RemoteTransaction.Part part) {}

  /**
   * Per entity (in the order entities first appear), the parts of every transaction touching it,
   * each with its transaction's timestamp, in the origin's order.
   */
  public Map<EntityId, List<Segment>> segmentsByEntity() {
    Map<EntityId, List<Segment>> segments = new LinkedHashMap<>();
    for (RemoteTransaction transaction : transactions) {
      for (RemoteTransaction.Part part : transaction.parts()) {
        segments.computeIfAbsent(part.entity(), entity -> new ArrayList<>())
            .add(new Segment(transaction.transactionTimestamp(), part));
      }
    }
    return segments;
  }

  /** The first transaction's place (what identifies the application within its origin). */
  public long firstTransactionTimestamp() {
    return transactions.get(0).transactionTimestamp();
  }

  /** The last transaction's place: the applying vector is raised to it before application. */
  public long lastTransactionTimestamp() {
    return transactions.get(transactions.size() - 1).transactionTimestamp();
  }

  /** The largest timestamp among all its entries (the clock observes it before applying). */
  public long lastTimestamp() {
    long last = Long.MIN_VALUE;
    for (RemoteTransaction transaction : transactions) {
      last = Math.max(last, transaction.lastTimestamp());
    }
    return last;
  }
}
