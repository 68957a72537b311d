package dev.troupe.txn.check;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A versioned store that runs transactions one at a time and records them, so every history it
 * produces is serial by construction: the reference the checker tests compare against. Writes get
 * fresh, increasing versions; a write takes effect only if the transaction committed (or, for an
 * unknown outcome, if the caller says it did).
 */
final class SerialStore {

  /**
   * One executed transaction, with, for each object it read, the versions of that object that had
   * been overwritten before it ran (version 0 included), oldest first: the candidates for a stale
   * read.
   */
  record Executed(RecordedTransaction transaction, Map<String, List<Long>> overwrittenBeforeRead) {}

  private final Map<String, List<Long>> installedVersions = new HashMap<>();
  private final List<Executed> executed = new ArrayList<>();
  private long lastVersion;

  /**
   * Runs one transaction: it reads the current version of each object of {@code readObjects},
   * then writes each object of {@code writeObjects} with a fresh version.
   *
   * @param takesEffect whether the writes are installed; ignored (true) for committed
   *     transactions and (false) for aborted ones
   */
  Executed run(
      String id,
      Outcome outcome,
      boolean takesEffect,
      Collection<String> readObjects,
      Collection<String> writeObjects) {
    Map<String, Long> reads = new TreeMap<>();
    Map<String, List<Long>> overwritten = new TreeMap<>();
    for (String objectId : readObjects) {
      List<Long> installed = installedVersions.getOrDefault(objectId, List.of());
      reads.put(objectId, installed.isEmpty() ? 0L : installed.get(installed.size() - 1));
      List<Long> older = new ArrayList<>();
      if (!installed.isEmpty()) {
        older.add(0L);
        older.addAll(installed.subList(0, installed.size() - 1));
      }
      overwritten.put(objectId, older);
    }
    Map<String, Long> writes = new TreeMap<>();
    for (String objectId : writeObjects) {
      writes.put(objectId, ++lastVersion);
    }
    boolean installs = switch (outcome) {
      case COMMITTED -> true;
      case ABORTED -> false;
      case UNKNOWN -> takesEffect;
    };
    if (installs) {
      writes.forEach((objectId, version) ->
          installedVersions.computeIfAbsent(objectId, key -> new ArrayList<>()).add(version));
    }
    Executed result =
        new Executed(new RecordedTransaction(id, outcome, reads, writes), overwritten);
    executed.add(result);
    return result;
  }

  List<Executed> executed() {
    return List.copyOf(executed);
  }

  History history() {
    return new History(executed.stream().map(Executed::transaction).toList());
  }
}
