package dev.troupe.txn.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Decides serializability by brute force, without any dependency graph, as an independent oracle
 * for the checker: for every choice of which unknown-outcome transactions committed, it searches
 * all serial orders (by dynamic programming over subsets) for one in which each transaction reads
 * the latest version installed before it and installs its writes in version order. Exponential,
 * so only for histories of a handful of transactions with unique versions.
 */
final class ExhaustiveSerializability {
  private static final int MOST_TRANSACTIONS = 16;

  private ExhaustiveSerializability() {}

  static boolean isSerializable(History history) {
    List<RecordedTransaction> committed = new ArrayList<>();
    List<RecordedTransaction> unknown = new ArrayList<>();
    for (RecordedTransaction transaction : history.transactions()) {
      switch (transaction.outcome()) {
        case COMMITTED -> committed.add(transaction);
        case UNKNOWN -> unknown.add(transaction);
        case ABORTED -> { }
      }
    }
    if (committed.size() + unknown.size() > MOST_TRANSACTIONS) {
      throw new IllegalArgumentException("too many transactions for an exhaustive search");
    }
    for (int choice = 0; choice < 1 << unknown.size(); choice++) {
      List<RecordedTransaction> included = new ArrayList<>(committed);
      for (int position = 0; position < unknown.size(); position++) {
        if ((choice & 1 << position) != 0) {
          included.add(unknown.get(position));
        }
      }
      if (readsOnlyIncludedWrites(included) && hasSerialOrder(included)) {
        return true;
      }
    }
    return false;
  }

  private static boolean readsOnlyIncludedWrites(List<RecordedTransaction> included) {
    Set<String> written = new HashSet<>();
    for (RecordedTransaction transaction : included) {
      transaction.writes().forEach((objectId, version) -> written.add(objectId + "/" + version));
    }
    for (RecordedTransaction transaction : included) {
      for (Map.Entry<String, Long> read : transaction.reads().entrySet()) {
        if (read.getValue() != 0 && !written.contains(read.getKey() + "/" + read.getValue())) {
          return false;
        }
      }
    }
    return true;
  }

  private static boolean hasSerialOrder(List<RecordedTransaction> included) {
    int count = included.size();
    Map<String, TreeSet<Long>> versions = new HashMap<>();
    for (RecordedTransaction transaction : included) {
      transaction.writes().forEach((objectId, version) ->
          versions.computeIfAbsent(objectId, key -> new TreeSet<>()).add(version));
    }
    int everyone = (1 << count) - 1;
    boolean[] reachable = new boolean[1 << count];
    reachable[0] = true;
    for (int placed = 0; placed <= everyone; placed++) {
      if (!reachable[placed]) {
        continue;
      }
      Map<String, Long> latest = new HashMap<>();
      for (int index = 0; index < count; index++) {
        if ((placed & 1 << index) != 0) {
          included.get(index).writes().forEach(
              (objectId, version) -> latest.merge(objectId, version, Math::max));
        }
      }
      for (int index = 0; index < count; index++) {
        if ((placed & 1 << index) == 0 && canRunNext(included.get(index), latest, versions)) {
          reachable[placed | 1 << index] = true;
        }
      }
    }
    return reachable[everyone];
  }

  private static boolean canRunNext(
      RecordedTransaction transaction,
      Map<String, Long> latest,
      Map<String, TreeSet<Long>> versions) {
    for (Map.Entry<String, Long> read : transaction.reads().entrySet()) {
      if (latest.getOrDefault(read.getKey(), 0L).longValue() != read.getValue().longValue()) {
        return false;
      }
    }
    for (Map.Entry<String, Long> write : transaction.writes().entrySet()) {
      Long previous = versions.get(write.getKey()).lower(write.getValue());
      long mustBeLatest = previous == null ? 0L : previous;
      if (latest.getOrDefault(write.getKey(), 0L) != mustBeLatest) {
        return false;
      }
    }
    return true;
  }
}
