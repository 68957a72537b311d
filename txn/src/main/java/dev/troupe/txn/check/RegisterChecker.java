package dev.troupe.txn.check;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Checks a read-write register history whose writes are unique values, each register keeping the
 * log of the values written to it beside its current value (written by the same action, so under
 * the same lock). A read returns one value, and the value alone says which write it observed: the
 * version a read saw is identified by the data, never by a version the system reports, so a read
 * of a value that was never written, was written by an aborted transaction, or was overwritten in
 * an order the transactions' other reads contradict is caught.
 *
 * <p>Ground truth is the final state: each register's current value and its log. The current
 * value must be the log's last element ({@link #CURRENT_NOT_LAST_WRITE}: a write applied to one
 * and not the other). Then the history is the list-append history it is equivalent to, checked by
 * {@link ListAppendChecker}: a write appends its value to the register's log, a read of value v
 * reads the log's prefix up to v (a read of a value not in the log reads just that value, which
 * the list-append checks report: an unknown, aborted or lost element, or an order the log
 * contradicts). So duplicated, lost, aborted and partly applied writes, and every cycle of the
 * serialization graph (G0, G1c, G2) with the version order read off the logs, are caught.
 *
 * <p>A transaction must not read a register it also writes (as in list-append). Pure and
 * deterministic for a given history.
 */
public final class RegisterChecker {
  /** A register's current value is not the last value of its log. */
  public static final String CURRENT_NOT_LAST_WRITE = "current_not_last_write";

  private RegisterChecker() {}

  /** One operation of a transaction, in the order the transaction ran them. */
  public sealed interface Operation {
    String register();

    /** Wrote {@code value} (unique in the whole history) to {@code register}. */
    record Write(String register, String value) implements Operation {}

    /** Read {@code register}; {@code observed} is the value read, null if it held none. */
    record Read(String register, String observed) implements Operation {}
  }

  /** One transaction as its client saw it; reads are recorded only when it committed. */
  public record Transaction(String id, Outcome outcome, List<Operation> operations) {
    public Transaction {
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(outcome, "outcome");
      operations = List.copyOf(operations);
    }
  }

  /**
   * A register's final state.
   *
   * @param current its value, null if none
   * @param log every value written to it, in the order the writes took effect
   */
  public record FinalRegister(String current, List<String> log) {
    public FinalRegister {
      log = List.copyOf(log);
    }
  }

  /** Checks a history against the final state of every register it touched. */
  public static SerializabilityChecker.Result check(List<Transaction> transactions,
      Map<String, FinalRegister> finalRegisters) {
    Map<String, List<String>> logs = new java.util.LinkedHashMap<>();
    for (Map.Entry<String, FinalRegister> register : finalRegisters.entrySet()) {
      List<String> log = register.getValue().log();
      String last = log.isEmpty() ? null : log.get(log.size() - 1);
      if (!Objects.equals(last, register.getValue().current())) {
        return new SerializabilityChecker.Violation(CURRENT_NOT_LAST_WRITE, List.of(),
            "register " + register.getKey() + " holds " + register.getValue().current()
                + " but its log ends with " + last + ": " + log);
      }
      logs.put(register.getKey(), log);
    }
    List<ListAppendChecker.Transaction> lists = new ArrayList<>();
    for (Transaction transaction : transactions) {
      List<ListAppendChecker.Operation> operations = new ArrayList<>();
      for (Operation operation : transaction.operations()) {
        operations.add(switch (operation) {
          case Operation.Write write ->
              new ListAppendChecker.Operation.Append(write.register(), write.value());
          case Operation.Read read -> new ListAppendChecker.Operation.Read(read.register(),
              prefixThrough(logs.getOrDefault(read.register(), List.of()), read.observed()));
        });
      }
      lists.add(new ListAppendChecker.Transaction(transaction.id(), transaction.outcome(),
          operations));
    }
    return ListAppendChecker.check(lists, logs);
  }

  /** The log up to and including {@code value}; just the value if the log lacks it. */
  private static List<String> prefixThrough(List<String> log, String value) {
    if (value == null) {
      return List.of();
    }
    int at = log.indexOf(value);
    return at < 0 ? List.of(value) : log.subList(0, at + 1);
  }
}
