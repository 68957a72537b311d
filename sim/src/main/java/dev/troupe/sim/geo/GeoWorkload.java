package dev.troupe.sim.geo;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.Deletions;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.sim.Scheduler;
import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.sim.geo.CausalHistory.ObjectWrite;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Clients of several data centres (DCs). Each client is a session: one request at a time, a
 * short think time between requests, mostly at the DC it last used and now and then at another
 * (it moves, carrying its causal token: the DC serves it only once its applied vector covers the
 * token, else it waits up to the token wait, then tries another DC).
 *
 * <p>Objects ({@code Item/i0}, ...) hold a register {@code r} (unique values), a counter {@code n}
 * (increments of 1 to 5), a set {@code s} (adds and removes of a few elements) and the write log
 * {@link #WRITE_LOG} (every writing transaction adds its own id, never removed: what a read shows
 * of it is exactly which writes of the object were visible). Requests: reads of one to three
 * objects (atomic at one DC), writes of one object (register, increment, add, remove, or
 * several), and multi-object transactions of two or three objects. Everything a request does at a
 * DC happens in one scheduler step, as one transaction on one snapshot; its reads are recorded
 * before its writes.
 *
 * <p>Deletes (docs/ARCHITECTURE.md, "Deletes across data centres"): one request in four writes or
 * deletes, at its DC, a key of one of two other objects ({@code Gone/g0}, {@code Gone/g1}: a
 * register {@code r}, a counter {@code n}, a set {@code s}), or deletes the whole object, each
 * deletion made as the turn evaluator makes it ({@link Deletions}). These objects are not in the
 * causal history (a deletion has no place in its write log); the convergence check compares them
 * in every DC, so a deletion that does not converge with concurrent writes is caught.
 */
final class GeoWorkload {
  /** The hidden-by-convention key every writing transaction adds its id to. */
  static final String WRITE_LOG = "w";

  private static final List<String> ELEMENTS = List.of("a", "b", "c", "d");

  /**
   * A breakage of the workload's own (the clients play the HTTP edge's part): DCs serve clients
   * without waiting for their causal tokens, so a client that moves may read an older state.
   */
  static final String IGNORE_CAUSAL_TOKENS = "IGNORE_CAUSAL_TOKENS";

  private final Scheduler scheduler;
  private final GeoOptions options;
  private final SimulatedDataCentres dataCentres;
  private final CausalHistory.Recorder recorder = new CausalHistory.Recorder();
  private final long loadEndsMillis;
  private long nextRegisterValue = 1;
  long reads;
  long writes;
  long multiObjectWrites;
  long moves;
  long tokenWaitsGivenUp;
  long requestsAtDownDataCentre;
  long deletes;

  GeoWorkload(Scheduler scheduler, GeoOptions options, SimulatedDataCentres dataCentres) {
    this.scheduler = scheduler;
    this.options = options;
    this.dataCentres = dataCentres;
    this.loadEndsMillis = options.durationMillis();
    this.honourTokens = !options.mutations().contains(IGNORE_CAUSAL_TOKENS);
    this.deleteRequests = !options.mutations().contains(WITHOUT_DELETE_REQUESTS);
  }

  private final boolean honourTokens;

  /**
   * A workload variant, named among the options' breakages though it breaks nothing: no delete
   * requests, so that the runs draw exactly what they drew before delete requests existed (the
   * breakage tests whose catching seeds were found then: an equal-stamp race on two objects is
   * rarer when a quarter of the requests go elsewhere).
   */
  static final String WITHOUT_DELETE_REQUESTS = "WITHOUT_DELETE_REQUESTS";

  private final boolean deleteRequests;

  CausalHistory history() {
    return recorder.history();
  }

  static String object(int index) {
    return "Item/i" + index;
  }

  void start() {
    for (int dc = 0; dc < dataCentres.size(); dc++) {
      for (int client = 0; client < options.clientsPerDataCentre(); client++) {
        Client session = new Client("c" + dc + "-" + client, dc);
        scheduler.schedule(scheduler.random().nextLong(10), session.name + " starts",
            () -> next(session));
      }
    }
  }

  private final class Client {
    final String name;
    int dataCentre;
    DependencyVector token = DependencyVector.EMPTY;
    int sequence;

    Client(String name, int dataCentre) {
      this.name = name;
      this.dataCentre = dataCentre;
    }
  }

  private void next(Client client) {
    if (scheduler.nowMillis() >= loadEndsMillis) {
      return;
    }
    if (scheduler.random().nextInt(100) < 15) {
      client.dataCentre = otherThan(client.dataCentre);
      moves++;
    }
    attempt(client, scheduler.nowMillis());
  }

  private int otherThan(int dataCentre) {
    int other = scheduler.random().nextInt(dataCentres.size() - 1);
    return other >= dataCentre ? other + 1 : other;
  }

  private void attempt(Client client, long waitingSinceMillis) {
    SimulatedDataCentre dataCentre = dataCentres.get(client.dataCentre);
    if (!dataCentre.up()) {
      requestsAtDownDataCentre++;
      client.dataCentre = otherThan(client.dataCentre);
      scheduler.schedule(10, client.name + " retries at dc" + client.dataCentre,
          () -> attempt(client, scheduler.nowMillis()));
      return;
    }
    if (honourTokens && !dataCentre.covers(client.token)) {
      if (scheduler.nowMillis() - waitingSinceMillis >= options.tokenWaitMaxMillis()) {
        tokenWaitsGivenUp++; // answered 503 not_yet_visible: the client tries elsewhere
        client.dataCentre = otherThan(client.dataCentre);
        scheduler.schedule(5, client.name + " tries dc" + client.dataCentre,
            () -> attempt(client, scheduler.nowMillis()));
      } else {
        scheduler.schedule(5, client.name + " waits for its token at " + dataCentre.name,
            () -> attempt(client, waitingSinceMillis));
      }
      return;
    }
    run(client, dataCentre);
    client.token = client.token.merge(dataCentre.causalToken());
    scheduler.schedule(2 + scheduler.random().nextLong(30), client.name + " thinks",
        () -> next(client));
  }

  /** The objects of delete requests: not in the causal history (see the class comment). */
  static final String DELETED_OBJECTS = "Gone/";

  /** One request at one DC, in this one step. */
  private void run(Client client, SimulatedDataCentre dataCentre) {
    if (deleteRequests && scheduler.random().nextInt(4) == 0) {
      writeOrDelete(dataCentre);
      return;
    }
    String id = client.name + "-" + client.sequence++;
    int kind = scheduler.random().nextInt(100);
    int objectCount = kind < 30 ? 1 + scheduler.random().nextInt(3)
        : kind < 80 ? 1 : 2 + scheduler.random().nextInt(2);
    objectCount = Math.min(objectCount, options.entities());
    List<String> objects = new ArrayList<>();
    while (objects.size() < objectCount) {
      String object = object(scheduler.random().nextInt(options.entities()));
      if (!objects.contains(object)) {
        objects.add(object);
      }
    }
    SortedMap<String, ObjectRead> observed = dataCentre.read(objects);
    TreeMap<String, ObjectWrite> written = new TreeMap<>();
    if (kind < 30) {
      reads++;
    } else {
      writes++;
      if (objects.size() > 1) {
        multiObjectWrites++;
      }
      long transactionId = dataCentre.newTransactionId();
      int[] tagIndex = {0};
      TreeMap<String, List<Operation>> parts = new TreeMap<>();
      for (String object : objects) {
        EntityState state = dataCentre.state(object);
        List<Operation> operations = new ArrayList<>();
        operations.add(new Operation.AddElement(WRITE_LOG, TextNode.valueOf(id),
            new Tag(dataCentre.id, transactionId, tagIndex[0]++)));
        TreeMap<String, Long> registers = new TreeMap<>();
        TreeMap<String, Long> increments = new TreeMap<>();
        TreeMap<String, Set<String>> adds = new TreeMap<>();
        TreeMap<String, Set<String>> removes = new TreeMap<>();
        int effects = 1 + (scheduler.random().nextInt(4) == 0 ? 1 : 0);
        for (int effect = 0; effect < effects; effect++) {
          switch (scheduler.random().nextInt(4)) {
            case 0 -> {
              if (!registers.containsKey("r")) {
                long value = nextRegisterValue++;
                registers.put("r", value);
                operations.add(new Operation.Assign("r", LongNode.valueOf(value)));
              }
            }
            case 1 -> {
              long by = 1 + scheduler.random().nextInt(5);
              increments.merge("n", by, Long::sum);
              operations.add(new Operation.Increment("n", by));
            }
            case 2 -> {
              String element = ELEMENTS.get(scheduler.random().nextInt(ELEMENTS.size()));
              if (!removes.getOrDefault("s", Set.of()).contains(element)) {
                adds.computeIfAbsent("s", ignored -> new java.util.TreeSet<>()).add(element);
                operations.add(new Operation.AddElement("s", TextNode.valueOf(element),
                    new Tag(dataCentre.id, transactionId, tagIndex[0]++)));
              }
            }
            default -> {
              String element = ELEMENTS.get(scheduler.random().nextInt(ELEMENTS.size()));
              if (state.get("s") instanceof SetValue set && set.contains(TextNode.valueOf(element))
                  && !adds.getOrDefault("s", Set.of()).contains(element)) {
                removes.computeIfAbsent("s", ignored -> new java.util.TreeSet<>()).add(element);
                operations.add(new Operation.RemoveElement("s", TextNode.valueOf(element),
                    set.tagsOf(TextNode.valueOf(element))));
              }
            }
          }
        }
        parts.put(object, operations);
        written.put(object, new ObjectWrite(registers, increments, adds, removes));
      }
      dataCentre.commitLocal(transactionId, parts);
    }
    recorder.record(new CausalHistory.Transaction(id, client.name, dataCentre.name, observed,
        written));
  }

  /** A write or deletion of a {@code Gone/} object, as one local transaction. */
  private void writeOrDelete(SimulatedDataCentre dataCentre) {
    String object = DELETED_OBJECTS + "g" + scheduler.random().nextInt(2);
    // Deletions race with writes of the same key in other DCs: two objects, three keys.
    EntityState state = dataCentre.state(object);
    long transactionId = dataCentre.newTransactionId();
    List<Operation> operations = new ArrayList<>();
    int kind = scheduler.random().nextInt(7);
    String key = List.of("r", "n", "s").get(kind % 3);
    switch (kind) {
      case 0 -> operations.add(new Operation.Assign("r", LongNode.valueOf(nextRegisterValue++)));
      case 1 -> operations.add(new Operation.Increment("n", 1 + scheduler.random().nextInt(5)));
      case 2 -> operations.add(new Operation.AddElement("s",
          TextNode.valueOf(ELEMENTS.get(scheduler.random().nextInt(ELEMENTS.size()))),
          new Tag(dataCentre.id, transactionId, 0)));
      case 3, 4, 5 -> {
        if (state.get(key) != null) {
          operations.add(Deletions.ofKey(state, key));
        }
      }
      default -> {
        if (state.exists()) {
          operations.addAll(Deletions.ofEntity(state));
        }
      }
    }
    if (!operations.isEmpty()) {
      deletes += kind >= 3 ? 1 : 0;
      dataCentre.commitLocal(transactionId, new TreeMap<>(Map.of(object, operations)));
    }
  }

  /** Statistics for the summary. */
  Map<String, Long> counts() {
    TreeMap<String, Long> counts = new TreeMap<>();
    counts.put("reads", reads);
    counts.put("writes", writes);
    counts.put("multi-object writes", multiObjectWrites);
    counts.put("moves", moves);
    counts.put("token waits given up", tokenWaitsGivenUp);
    counts.put("requests at a DC that was down", requestsAtDownDataCentre);
    counts.put("deletes", deletes);
    return counts;
  }
}
