package dev.troupe.txn.check;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Checks that a recorded history is serializable, the isolation level multi-entity transactions
 * promise. It builds Adya's direct serialization graph over the committed transactions at the
 * granularity of the recorded object ids (write-write, write-read and read-write anti-dependency
 * edges, the version order being the numeric order of versions) and looks for a cycle: the history
 * is serializable exactly when there is none. Before that it rejects what the graph cannot express:
 * reads of aborted or never-written versions, duplicate versions and duplicate transaction ids.
 */
public final class SerializabilityChecker {

  /** Two recorded transactions share one id. Evidence: the id. */
  public static final String DUPLICATE_TRANSACTION_ID = "duplicate_transaction_id";

  /** Two transactions wrote the same version of one object. Evidence: both ids. */
  public static final String DUPLICATE_VERSION = "duplicate_version";

  /** G1a: a committed transaction read a version an aborted one wrote. Evidence: reader, writer. */
  public static final String ABORTED_READ = "aborted_read";

  /** A committed transaction read a version (not 0) no transaction wrote. Evidence: the reader. */
  public static final String READ_OF_UNWRITTEN_VERSION = "read_of_unwritten_version";

  /**
   * A committed transaction read and wrote the same version of one object: its read must observe
   * the version before its own write. Evidence: the transaction.
   */
  public static final String READ_MODIFY_WRITE_ORDER = "read_modify_write_order";

  /** G0: a cycle of write-write edges only (writes of two transactions interleaved). */
  public static final String CYCLE_G0 = "cycle:G0";

  /** G1c: a cycle of write-write and write-read edges (circular information flow). */
  public static final String CYCLE_G1C = "cycle:G1c";

  /** G2: a cycle with at least one anti-dependency edge (lost update, write skew, ...). */
  public static final String CYCLE_G2 = "cycle:G2";

  private SerializabilityChecker() {}

  /** The checker's verdict on one history. */
  public sealed interface Result permits Serializable, Violation {}

  /**
   * No violation: the committed transactions have an equivalent serial order. The counts say what
   * the checker actually looked at, so tests can assert it saw the history they meant.
   *
   * @param transactionsChecked committed transactions, plus the transactions of unknown outcome
   *     counted as committed because a committed transaction read one of their writes
   * @param writeWriteEdges write-write (ww) dependency edges in the graph
   * @param writeReadEdges write-read (wr) dependency edges in the graph
   * @param readWriteEdges read-write (rw) anti-dependency edges in the graph
   */
  public record Serializable(
      int transactionsChecked, int writeWriteEdges, int writeReadEdges, int readWriteEdges)
      implements Result {
    /** All edges of the graph. */
    public int edges() {
      return writeWriteEdges + writeReadEdges + readWriteEdges;
    }
  }

  /**
   * The history is not serializable, or is malformed.
   *
   * @param kind one of the constants of {@link SerializabilityChecker} ({@code cycle:G0},
   *     {@code cycle:G1c}, {@code cycle:G2}, {@code aborted_read}, ...)
   * @param cycleOrEvidence for a cycle, the ids of the transactions along it, each once, in edge
   *     order (the last has an edge back to the first); otherwise the ids of the transactions
   *     involved, as documented on each kind
   * @param explanation a human-readable account; for a cycle, every edge with its type and the
   *     object and version that its source transaction wrote (ww, wr) or read (rw), for example
   *     {@code G2 cycle (anti-dependency cycle): T1 -ww(acct/1)-> T2 -rw(acct/1)-> T1}
   */
  public record Violation(String kind, List<String> cycleOrEvidence, String explanation)
      implements Result {
    /** Validates and copies. */
    public Violation {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(explanation, "explanation");
      cycleOrEvidence = List.copyOf(cycleOrEvidence);
    }
  }

  /**
   * Checks one history. The rules, in the order they are applied (the first violation found is
   * reported; the answer is deterministic for a given history):
   *
   * <ol>
   *   <li>Transaction ids must be unique, and no two transactions (whatever their outcome) may
   *       write the same version of one object.
   *   <li>Committed transactions are checked. A transaction of unknown outcome counts as committed
   *       if a transaction counted as committed read a version it wrote (repeatedly, so chains of
   *       such reads count); otherwise it is ignored, as are aborted transactions.
   *   <li>A counted transaction may read version 0 of any object, or a version written by a
   *       counted transaction: a version written by an aborted transaction is {@link
   *       #ABORTED_READ}, one written by nobody is {@link #READ_OF_UNWRITTEN_VERSION}. A
   *       transaction that reads and writes one object must not read the version it writes
   *       ({@link #READ_MODIFY_WRITE_ORDER}).
   *   <li>Edges between counted transactions: for each object, ww from the writer of each version
   *       to the writer of the next; wr from the writer of a version to each of its readers; rw
   *       from each reader of a version (version 0 included) to the writer of the next version.
   *       Self edges are skipped.
   *   <li>A cycle is searched for among ww edges ({@link #CYCLE_G0}), then ww and wr edges
   *       ({@link #CYCLE_G1C}), then all edges ({@link #CYCLE_G2}), so the reported class is the
   *       most severe one present. Before the last search, every read-modify-write whose read and
   *       write have a counted version of the object between them is reported as a lost update.
   * </ol>
   *
   * <p>Runs in time roughly linear in the size of the history (plus sorting the versions of each
   * object) and without recursion, so histories of hundreds of thousands of transactions are fine.
   *
   * @throws NullPointerException if the history is null
   */
  public static Result check(History history) {
    Objects.requireNonNull(history, "history");
    return new Analysis(history.transactions()).run();
  }

  /** The three kinds of dependency edge of the direct serialization graph. */
  private enum EdgeType {
    WRITE_WRITE("ww"),
    WRITE_READ("wr"),
    READ_WRITE("rw");

    final String shortName;

    EdgeType(String shortName) {
      this.shortName = shortName;
    }
  }

  /**
   * One dependency of {@code to} on {@code from}, labelled with the object and the version its
   * source wrote (ww, wr) or read (rw).
   */
  private record Edge(int from, int to, EdgeType type, String objectId, long version) {}

  /** Counted writes of one object by version: {@code writers[k]} wrote {@code versions[k]}. */
  private record VersionOrder(long[] versions, int[] writers) {
    /** Index of the first version strictly greater than {@code version}; may be {@code length}. */
    int firstIndexAfter(long version) {
      int found = Arrays.binarySearch(versions, version);
      return found >= 0 ? found + 1 : -found - 1;
    }
  }

  /** The state of one check; used once. */
  private static final class Analysis {
    private final List<RecordedTransaction> transactions;
    private final int count;
    private final Map<String, Map<Long, Integer>> writerOfVersion = new HashMap<>();
    private final boolean[] counted;
    private final Map<String, VersionOrder> versionOrders = new HashMap<>();
    private int[] edgeOffsets;
    private Edge[] edgesBySource;

    Analysis(List<RecordedTransaction> transactions) {
      this.transactions = transactions;
      this.count = transactions.size();
      this.counted = new boolean[count];
    }

    Result run() {
      Violation violation = checkUniqueIds();
      if (violation == null) {
        violation = indexWrites();
      }
      if (violation == null) {
        countCommitted();
        violation = checkReads();
      }
      if (violation != null) {
        return violation;
      }
      buildVersionOrders();
      int[] edgeCounts = buildGraph();
      List<Edge> cycle = findCycle(EdgeType.WRITE_WRITE);
      if (cycle == null) {
        cycle = findCycle(EdgeType.WRITE_WRITE, EdgeType.WRITE_READ);
      }
      if (cycle != null) {
        return cycleViolation(cycle, "");
      }
      violation = findLostUpdate();
      if (violation != null) {
        return violation;
      }
      cycle = findCycle(EdgeType.values());
      if (cycle != null) {
        return cycleViolation(cycle, "");
      }
      int checked = 0;
      for (boolean isCounted : counted) {
        checked += isCounted ? 1 : 0;
      }
      return new Serializable(checked, edgeCounts[0], edgeCounts[1], edgeCounts[2]);
    }

    private String id(int index) {
      return transactions.get(index).id();
    }

    private Violation checkUniqueIds() {
      Map<String, Integer> positionOfId = new HashMap<>();
      for (int index = 0; index < count; index++) {
        Integer earlier = positionOfId.putIfAbsent(id(index), index);
        if (earlier != null) {
          return new Violation(DUPLICATE_TRANSACTION_ID, List.of(id(index)),
              "transaction id " + id(index) + " is recorded twice (positions " + earlier + " and "
                  + index + ")");
        }
      }
      return null;
    }

    private Violation indexWrites() {
      for (int index = 0; index < count; index++) {
        for (Map.Entry<String, Long> write : transactions.get(index).writes().entrySet()) {
          Integer earlier = writerOfVersion
              .computeIfAbsent(write.getKey(), objectId -> new HashMap<>())
              .putIfAbsent(write.getValue(), index);
          if (earlier != null) {
            return new Violation(DUPLICATE_VERSION, List.of(id(earlier), id(index)),
                id(earlier) + " and " + id(index) + " both wrote version "
                    + label(write.getKey(), write.getValue())
                    + "; versions must be unique per object");
          }
        }
      }
      return null;
    }

    private Integer writerOf(String objectId, long version) {
      Map<Long, Integer> writers = writerOfVersion.get(objectId);
      return writers == null ? null : writers.get(version);
    }

    /** Marks committed transactions, and unknown ones whose writes a counted one read. */
    private void countCommitted() {
      ArrayDeque<Integer> toVisit = new ArrayDeque<>();
      for (int index = 0; index < count; index++) {
        if (transactions.get(index).outcome() == Outcome.COMMITTED) {
          counted[index] = true;
          toVisit.add(index);
        }
      }
      while (!toVisit.isEmpty()) {
        int reader = toVisit.poll();
        for (Map.Entry<String, Long> read : transactions.get(reader).reads().entrySet()) {
          Integer writer = writerOf(read.getKey(), read.getValue());
          if (writer != null && !counted[writer]
              && transactions.get(writer).outcome() == Outcome.UNKNOWN) {
            counted[writer] = true;
            toVisit.add(writer);
          }
        }
      }
    }

    private Violation checkReads() {
      for (int reader = 0; reader < count; reader++) {
        if (!counted[reader]) {
          continue;
        }
        RecordedTransaction transaction = transactions.get(reader);
        for (Map.Entry<String, Long> read : transaction.reads().entrySet()) {
          String objectId = read.getKey();
          long version = read.getValue();
          if (version == 0) {
            continue;
          }
          Integer writer = writerOf(objectId, version);
          if (writer == null) {
            return new Violation(READ_OF_UNWRITTEN_VERSION, List.of(id(reader)),
                id(reader) + " read " + label(objectId, version)
                    + ", a version no recorded transaction wrote");
          }
          if (!counted[writer]) {
            return new Violation(ABORTED_READ, List.of(id(reader), id(writer)),
                "G1a (aborted read): " + id(reader) + " read " + label(objectId, version)
                    + ", written by " + id(writer) + ", which aborted");
          }
          Long written = transaction.writes().get(objectId);
          if (written != null && written == version) {
            return new Violation(READ_MODIFY_WRITE_ORDER, List.of(id(reader)),
                id(reader) + " read " + label(objectId, version)
                    + " and wrote that same version; a read must observe the version before the"
                    + " transaction's own write");
          }
        }
      }
      return null;
    }

    private void buildVersionOrders() {
      Map<String, List<long[]>> writesByObject = new HashMap<>();
      for (int index = 0; index < count; index++) {
        if (!counted[index]) {
          continue;
        }
        for (Map.Entry<String, Long> write : transactions.get(index).writes().entrySet()) {
          writesByObject.computeIfAbsent(write.getKey(), objectId -> new ArrayList<>())
              .add(new long[] {write.getValue(), index});
        }
      }
      for (Map.Entry<String, List<long[]>> entry : writesByObject.entrySet()) {
        List<long[]> writes = entry.getValue();
        writes.sort((left, right) -> Long.compare(left[0], right[0]));
        long[] versions = new long[writes.size()];
        int[] writers = new int[writes.size()];
        for (int position = 0; position < writes.size(); position++) {
          versions[position] = writes.get(position)[0];
          writers[position] = (int) writes.get(position)[1];
        }
        versionOrders.put(entry.getKey(), new VersionOrder(versions, writers));
      }
    }

    /** Builds the edges, grouped by source; answers the number of ww, wr and rw edges. */
    private int[] buildGraph() {
      List<Edge> edges = new ArrayList<>();
      for (int index = 0; index < count; index++) {
        if (!counted[index]) {
          continue;
        }
        RecordedTransaction transaction = transactions.get(index);
        for (Map.Entry<String, Long> write : transaction.writes().entrySet()) {
          VersionOrder order = versionOrders.get(write.getKey());
          int next = order.firstIndexAfter(write.getValue());
          if (next < order.versions().length) {
            edges.add(new Edge(index, order.writers()[next], EdgeType.WRITE_WRITE,
                write.getKey(), write.getValue()));
          }
        }
        for (Map.Entry<String, Long> read : transaction.reads().entrySet()) {
          String objectId = read.getKey();
          long version = read.getValue();
          if (version > 0) {
            int writer = writerOf(objectId, version);
            if (writer != index) {
              edges.add(new Edge(writer, index, EdgeType.WRITE_READ, objectId, version));
            }
          }
          VersionOrder order = versionOrders.get(objectId);
          if (order != null) {
            int next = order.firstIndexAfter(version);
            if (next < order.versions().length && order.writers()[next] != index) {
              edges.add(new Edge(index, order.writers()[next], EdgeType.READ_WRITE, objectId,
                  version));
            }
          }
        }
      }
      int[] edgeCounts = new int[EdgeType.values().length];
      edgeOffsets = new int[count + 1];
      for (Edge edge : edges) {
        edgeCounts[edge.type().ordinal()]++;
        edgeOffsets[edge.from() + 1]++;
      }
      for (int index = 0; index < count; index++) {
        edgeOffsets[index + 1] += edgeOffsets[index];
      }
      edgesBySource = new Edge[edges.size()];
      int[] filled = Arrays.copyOf(edgeOffsets, count);
      for (Edge edge : edges) {
        edgesBySource[filled[edge.from()]++] = edge;
      }
      return edgeCounts;
    }

    /**
     * Iterative depth-first search over the edges of the given types; answers the edges of one
     * cycle in order, or null if there is none.
     */
    private List<Edge> findCycle(EdgeType... types) {
      boolean[] allowed = new boolean[EdgeType.values().length];
      for (EdgeType type : types) {
        allowed[type.ordinal()] = true;
      }
      final byte unvisited = 0;
      final byte onPath = 1;
      final byte finished = 2;
      byte[] state = new byte[count];
      int[] nextEdge = new int[count];
      int[] depthOnPath = new int[count];
      int[] pathNodes = new int[count];
      Edge[] pathEdges = new Edge[count];
      for (int root = 0; root < count; root++) {
        if (!counted[root] || state[root] != unvisited) {
          continue;
        }
        int depth = 0;
        pathNodes[0] = root;
        state[root] = onPath;
        depthOnPath[root] = 0;
        nextEdge[root] = edgeOffsets[root];
        while (depth >= 0) {
          int node = pathNodes[depth];
          if (nextEdge[node] == edgeOffsets[node + 1]) {
            state[node] = finished;
            depth--;
            continue;
          }
          Edge edge = edgesBySource[nextEdge[node]++];
          if (!allowed[edge.type().ordinal()]) {
            continue;
          }
          int target = edge.to();
          if (state[target] == unvisited) {
            pathEdges[depth] = edge;
            depth++;
            pathNodes[depth] = target;
            state[target] = onPath;
            depthOnPath[target] = depth;
            nextEdge[target] = edgeOffsets[target];
          } else if (state[target] == onPath) {
            List<Edge> cycle = new ArrayList<>(depth - depthOnPath[target] + 1);
            for (int step = depthOnPath[target]; step < depth; step++) {
              cycle.add(pathEdges[step]);
            }
            cycle.add(edge);
            return cycle;
          }
        }
      }
      return null;
    }

    /**
     * A transaction that read version r of an object and wrote version w of it, with a counted
     * version between them, lost that version's update: it has an rw edge to the writer of the
     * version after r, and ww edges lead from there back to it.
     */
    private Violation findLostUpdate() {
      for (int index = 0; index < count; index++) {
        if (!counted[index]) {
          continue;
        }
        RecordedTransaction transaction = transactions.get(index);
        for (Map.Entry<String, Long> read : transaction.reads().entrySet()) {
          String objectId = read.getKey();
          long readVersion = read.getValue();
          Long writtenVersion = transaction.writes().get(objectId);
          if (writtenVersion == null || writtenVersion <= readVersion) {
            continue;
          }
          VersionOrder order = versionOrders.get(objectId);
          int first = order.firstIndexAfter(readVersion);
          int own = Arrays.binarySearch(order.versions(), writtenVersion);
          if (first >= own) {
            continue;
          }
          List<Edge> cycle = new ArrayList<>(own - first + 1);
          cycle.add(new Edge(index, order.writers()[first], EdgeType.READ_WRITE, objectId,
              readVersion));
          for (int position = first; position < own; position++) {
            cycle.add(new Edge(order.writers()[position], order.writers()[position + 1],
                EdgeType.WRITE_WRITE, objectId, order.versions()[position]));
          }
          String prefix = "lost update: " + id(index) + " read " + label(objectId, readVersion)
              + " and wrote " + label(objectId, writtenVersion) + ", but "
              + label(objectId, order.versions()[first]) + " (written by "
              + id(order.writers()[first]) + ") committed in between; ";
          return cycleViolation(cycle, prefix);
        }
      }
      return null;
    }

    private Violation cycleViolation(List<Edge> cycle, String prefix) {
      boolean anyWriteRead = false;
      boolean anyReadWrite = false;
      for (Edge edge : cycle) {
        anyWriteRead |= edge.type() == EdgeType.WRITE_READ;
        anyReadWrite |= edge.type() == EdgeType.READ_WRITE;
      }
      String kind;
      String description;
      if (anyReadWrite) {
        kind = CYCLE_G2;
        description = "G2 cycle (anti-dependency cycle): ";
      } else if (anyWriteRead) {
        kind = CYCLE_G1C;
        description = "G1c cycle (circular information flow): ";
      } else {
        kind = CYCLE_G0;
        description = "G0 cycle (write cycle): ";
      }
      List<String> ids = new ArrayList<>(cycle.size());
      StringBuilder explanation = new StringBuilder(prefix).append(description);
      explanation.append(id(cycle.get(0).from()));
      for (Edge edge : cycle) {
        ids.add(id(edge.from()));
        explanation.append(" -").append(edge.type().shortName).append('(')
            .append(label(edge.objectId(), edge.version())).append(")-> ")
            .append(id(edge.to()));
      }
      return new Violation(kind, ids, explanation.toString());
    }

    private static String label(String objectId, long version) {
      return objectId + "/" + version;
    }
  }
}
