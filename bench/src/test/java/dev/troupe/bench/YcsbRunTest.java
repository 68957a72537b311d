package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import me.tongfei.progressbar.ProgressBar;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A small YCSB run against a real Troupe server (its own process): every operation succeeds and
 * every value read back is one that was written, checked as a register history per record field:
 *
 * <ul>
 *   <li>a read returns, for each field, a value of a write that began before the read ended and
 *       was not superseded (another write of the field that began after it ended) before the read
 *       began;
 *   <li>after the run, each field holds the value of a write that no other write superseded.
 * </ul>
 *
 * <p>These are the linearizability conditions of a register that a history of complete operations
 * can check; a lost update, a stale read, or a value written to the wrong record or field fails
 * them. Values are YCSB's random ones, so different writes of a field write different values.
 */
class YcsbRunTest {
  private static final int RECORDS = 300;
  private static final int THREADS = 8;

  @TempDir Path directory;

  /**
   * One write of one field, with its real-time interval; recorded before it is sent (ending
   * "never"), so that a read that sees it while it is in flight finds it.
   */
  static final class Write {
    final String value;
    final long startNanos;
    volatile long endNanos = Long.MAX_VALUE;

    Write(String value, long startNanos) {
      this.value = value;
      this.startNanos = startNanos;
    }

    String value() {
      return value;
    }

    long startNanos() {
      return startNanos;
    }

    long endNanos() {
      return endNanos;
    }
  }

  /** Every write of every "record/field", and the reads that violated the register conditions. */
  static final class History {
    final Map<String, List<Write>> writes = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    final AtomicLong fieldsRead = new AtomicLong();

    List<Write> writing(String key, Map<String, String> texts, long start) {
      List<Write> started = new ArrayList<>();
      texts.forEach((field, text) -> {
        List<Write> list = writes.computeIfAbsent(key + "/" + field, ignored -> new ArrayList<>());
        Write write = new Write(text, start);
        synchronized (list) {
          list.add(write);
        }
        started.add(write);
      });
      return started;
    }

    void read(String key, Map<String, ByteIterator> result, long start, long end) {
      result.forEach((field, value) -> {
        fieldsRead.incrementAndGet();
        String text = value.toString();
        List<Write> list = writes.getOrDefault(key + "/" + field, List.of());
        synchronized (list) {
          boolean allowed = list.stream().anyMatch(write -> write.value().equals(text)
              && write.startNanos() < end
              && list.stream().noneMatch(later -> later.startNanos() > write.endNanos()
                  && later.endNanos() < start));
          if (!allowed) {
            violations.add("read of " + key + "/" + field + " returned a value no write could"
                + " have left there: " + text);
          }
        }
      });
    }

    /** The final value of a field must come from a write no other write superseded. */
    void checkFinal(String field, String value) {
      List<Write> list = writes.get(field);
      boolean allowed = list != null && list.stream().anyMatch(write ->
          write.value().equals(value)
              && list.stream().noneMatch(later -> later.startNanos() > write.endNanos()));
      if (!allowed) {
        violations.add("final value of " + field + " is not the last write's: " + value);
      }
    }
  }

  /** Records writes and checks reads around the real binding. */
  static final class CheckedDb extends DB {
    private final DB database = new RestEntityDb();
    private final History history;

    CheckedDb(History history) {
      this.history = history;
    }

    @Override
    public void init() throws DBException {
      database.setProperties(getProperties());
      database.init();
    }

    @Override
    public void cleanup() throws DBException {
      database.cleanup();
    }

    @Override
    public Status read(String table, String key, Set<String> fields,
        Map<String, ByteIterator> result) {
      long start = System.nanoTime();
      Status status = database.read(table, key, fields, result);
      if (status.isOk()) {
        history.read(key, result, start, System.nanoTime());
      }
      return status;
    }

    @Override
    public Status scan(String table, String startKey, int recordCount, Set<String> fields,
        Vector<HashMap<String, ByteIterator>> result) {
      return database.scan(table, startKey, recordCount, fields, result);
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
      return write(key, values, () -> database.update(table, key, values));
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
      return write(key, values, () -> database.insert(table, key, values));
    }

    @Override
    public Status delete(String table, String key) {
      return Status.NOT_IMPLEMENTED; // the core workloads used here do not delete
    }

    private Status write(String key, Map<String, ByteIterator> values,
        java.util.function.Supplier<Status> call) {
      // ByteIterators are consumed once: take the text before the binding reads them, and hand
      // the binding iterators over the same text.
      Map<String, String> texts = new HashMap<>();
      values.forEach((field, value) -> texts.put(field, value.toString()));
      values.replaceAll((field, value) -> new site.ycsb.StringByteIterator(texts.get(field)));
      List<Write> started = history.writing(key, texts, System.nanoTime());
      Status status = call.get();
      long end = System.nanoTime();
      started.forEach(write -> write.endNanos = end);
      return status;
    }
  }

  @Test
  void everyOperationSucceedsAndReadsReturnWrittenValues() throws Exception {
    History history = new History();
    try (TroupeProcess server = TroupeProcess.start(directory.resolve("data"),
        directory.resolve("server.log"), List.of("-Xmx512m"))) {
      server.awaitHealthy(Duration.ofSeconds(60));
      for (String workloadName : new String[] {"a", "f", "d", "e"}) {
        Properties properties = YcsbWorkloads.properties(YcsbWorkloads.named(workloadName),
            RECORDS);
        properties.setProperty(RestEntityDb.HOST_PROPERTY, "127.0.0.1");
        properties.setProperty(RestEntityDb.PORT_PROPERTY, Integer.toString(server.port()));
        try (ProgressBar progress = ProgressBars.start("ycsb " + workloadName, 1, "ops", 1)) {
          if (workloadName.equals("a")) {
            YcsbRunner.PhaseResult load = YcsbRunner.load(properties, THREADS,
                () -> new CheckedDb(history), progress);
            assertEquals(RECORDS, load.transactions(), "records loaded");
            assertEquals(Map.of(), load.failures(), "load failures");
          }
          YcsbRunner.PhaseResult run = YcsbRunner.transactions(properties, THREADS,
              () -> new CheckedDb(history), Duration.ofMillis(200), Duration.ofMillis(1500),
              progress);
          assertEquals(Map.of(), run.failures(), "failures in workload " + workloadName);
          assertTrue(run.transactions() > 50, "workload " + workloadName + " ran only "
              + run.transactions() + " transactions");
          // E scans (through the listing) and inserts; the others read.
          assertTrue(run.latencyNanoseconds().containsKey(
              workloadName.equals("e") ? "scan" : "read"), run.latencyNanoseconds().toString());
        }
      }
      // The final state of every record, read after all writers stopped.
      try (HttpConnection connection = server.connect()) {
        for (String field : history.writes.keySet()) {
          String[] parts = field.split("/");
          HttpConnection.Response response =
              connection.get("/v1/entities/usertable/" + parts[0] + "/keys/" + parts[1]);
          assertEquals(200, response.status(), response.text());
          history.checkFinal(field,
              dev.troupe.model.Json.parse(response.body()).get("value").asText());
        }
      }
    }
    assertTrue(history.fieldsRead.get() > 1000, "fields read: " + history.fieldsRead.get());
    assertEquals(List.of(), List.copyOf(history.violations));
  }
}
