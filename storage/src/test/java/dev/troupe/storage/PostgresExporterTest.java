package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.Tag;
import dev.troupe.storage.postgres.PostgresInstance;
import dev.troupe.storage.systemofrecord.PostgresExporter;
import dev.troupe.storage.systemofrecord.SystemOfRecordSettings;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The system-of-record exporter's shell against a real PostgreSQL and a real store: the tables hold
 * the states at the watermark, a replay of the same batches leaves them the same, an added key adds
 * a column, an unmappable value stops the exporter, and truncation waits for the watermark.
 */
class PostgresExporterTest {
  private static final AtomicInteger DATABASES = new AtomicInteger();
  private static PostgresInstance postgres;

  @TempDir Path directory;

  private final FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
  private final Map<String, CompiledType> types = new ConcurrentHashMap<>();

  @BeforeAll
  static void startPostgres() {
    postgres = PostgresInstance.start(32);
  }

  @AfterAll
  static void stopPostgres() {
    postgres.close();
  }

  private static final String STOCK = """
      type: Stock
      keys:
        qty:   {kind: counter}
        name:  {kind: register, default: ""}
        price: {kind: register, default: 0}
        tags:  {kind: set}
      """;

  private static CompiledType compile(String yaml) {
    return CompiledType.compile(SpecParser.parse(null, yaml.getBytes(StandardCharsets.UTF_8),
        true));
  }

  private String newDatabase() {
    String name = "export_" + DATABASES.incrementAndGet();
    postgres.createDatabase(name);
    return postgres.jdbcUrl(name);
  }

  private PostgresExporter export(Store store, String url) {
    SystemOfRecordSettings settings =
        new SystemOfRecordSettings(url, 5, 5, 20, 200, 5, 30, 3, 64);
    return PostgresExporter.start(store, 1, settings, entity -> Optional.of(
        types.getOrDefault(entity.type(), CompiledType.schemaless(entity.type()))));
  }

  private static long commit(Store store, EntityId entity, Operation... operations) {
    return store.commit(store.newTransactionId(), List.of(Fixtures.write(entity, operations)))
        .join().commitTimestamp();
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(10);
    }
  }

  private static void awaitWatermark(PostgresExporter exporter, long timestamp)
      throws InterruptedException {
    await("the watermark to reach " + timestamp + " (" + exporter.statistics() + ")",
        () -> exporter.statistics().watermark() >= timestamp);
  }

  /** Every row of a table, id to its columns as text, in id order. */
  private static Map<String, List<String>> rows(String url, String table) throws Exception {
    Map<String, List<String>> rows = new TreeMap<>();
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement();
        ResultSet result = statement.executeQuery("SELECT * FROM \"" + table + "\"")) {
      ResultSetMetaData meta = result.getMetaData();
      while (result.next()) {
        List<String> columns = new ArrayList<>();
        for (int c = 1; c <= meta.getColumnCount(); c++) {
          columns.add(meta.getColumnName(c) + "=" + result.getString(c));
        }
        rows.put(result.getString("id"), columns);
      }
    }
    return rows;
  }

  private static void sql(String url, String statementText) throws Exception {
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement()) {
      statement.execute(statementText);
    }
  }

  private void assertTablesEqualStatesAt(Store store, String url, List<EntityId> entities,
      long watermark) throws Exception {
    Map<String, List<String>> stock = rows(url, "Stock");
    for (EntityId entity : entities) {
      EntityState state = store.readAt(entity, watermark);
      if (!state.exists()) {
        assertTrue(!stock.containsKey(entity.id()), entity + " is deleted at " + watermark);
        continue;
      }
      JsonNode rendered = types.get("Stock").render(state);
      List<String> row = stock.get(entity.id());
      assertNotNull(row, entity + " has no row");
      assertTrue(row.contains("version=" + state.version()), row.toString());
      assertTrue(row.contains("qty=" + rendered.get("qty").asLong()), row + " vs " + rendered);
      assertTrue(row.contains("name=" + rendered.get("name").asText()), row + " vs " + rendered);
    }
  }

  @Test
  void tablesHoldTheStatesAtTheWatermarkAndAReplayLeavesThemTheSame() throws Exception {
    types.put("Stock", compile(STOCK));
    String url = newDatabase();
    try (RocksStore store = RocksStore.open(Fixtures.settings(directory).withReplicationLog(true), clock)) {
      List<EntityId> stocks = new ArrayList<>();
      long last = 0;
      for (int i = 0; i < 12; i++) {
        EntityId entity = new EntityId("Stock", "s" + i);
        stocks.add(entity);
        last = commit(store, entity, new Operation.Increment("qty", i + 1),
            new Operation.Assign("name", Json.NODES.textNode("item " + i)),
            new Operation.AddElement("tags", Json.NODES.textNode("t" + i % 3), new Tag(0, i + 1, 0)));
      }
      last = commit(store, stocks.get(3), 
          new Operation.DeleteEntity(store.read(stocks.get(3)).writeCounts()));
      EntityId note = new EntityId("Note", "n1");
      last = commit(store, note, new Operation.Assign("text", Json.NODES.textNode("hello")));

      Map<String, List<String>> firstStock;
      Map<String, List<String>> firstNotes;
      try (PostgresExporter exporter = export(store, url)) {
        awaitWatermark(exporter, last);
        assertTablesEqualStatesAt(store, url, stocks, exporter.statistics().watermark());
        firstStock = rows(url, "Stock");
        firstNotes = rows(url, "Note");
        assertEquals(11, firstStock.size(), "12 stocks, one deleted");
        assertTrue(firstNotes.get("n1").contains("state={\"text\": \"hello\"}"),
            firstNotes.toString());
      }

      // Replays the same batches (the watermark set back): the guarded writes change nothing.
      sql(url, "UPDATE troupe_system_of_record SET watermark = 0");
      try (PostgresExporter exporter = export(store, url)) {
        awaitWatermark(exporter, last);
        assertEquals(firstStock, rows(url, "Stock"));
        assertEquals(firstNotes, rows(url, "Note"));
        assertTrue(exporter.statistics().batches() >= 3,
            "14 records in batches of at most 5: " + exporter.statistics());
      }

      // Without the watermark row: the initial export copies every entity at one timestamp.
      sql(url, "DELETE FROM troupe_system_of_record");
      sql(url, "DELETE FROM \"Stock\" WHERE id IN ('s1', 's2')");
      try (PostgresExporter exporter = export(store, url)) {
        awaitWatermark(exporter, last);
        assertEquals(firstStock, rows(url, "Stock"));
      }
    }
  }

  @Test
  void anAddedKeyAddsAColumnAndAnUnmappableValueStopsTheExporter() throws Exception {
    types.put("Stock", compile(STOCK));
    String url = newDatabase();
    try (RocksStore store = RocksStore.open(Fixtures.settings(directory).withReplicationLog(true), clock);
        PostgresExporter exporter = export(store, url)) {
      EntityId entity = new EntityId("Stock", "s1");
      awaitWatermark(exporter, commit(store, entity, new Operation.Increment("qty", 1)));
      types.put("Stock", compile(STOCK + "  color: {kind: register, default: \"\"}\n"));
      awaitWatermark(exporter, commit(store, entity,
          new Operation.Assign("color", Json.NODES.textNode("red"))));
      assertTrue(rows(url, "Stock").get("s1").contains("color=red"), rows(url, "Stock").toString());

      long before = exporter.statistics().watermark();
      commit(store, entity, new Operation.Assign("price", Json.NODES.textNode("expensive")));
      await("the exporter to stop", () -> exporter.statistics().stoppedBecause() != null);
      assertTrue(exporter.statistics().stoppedBecause().contains("price"),
          exporter.statistics().stoppedBecause());
      assertEquals(before, exporter.statistics().watermark(), "nothing was skipped");
      assertTrue(exporter.statistics().errors() >= 1);
    }
  }

  @Test
  void truncationWaitsForTheWatermark() throws Exception {
    types.put("Stock", compile(STOCK));
    String url = newDatabase();
    StorageSettings settings = Fixtures.settings(directory).withReplicationLog(true).withCheckpoints(5, 1_000_000, 4)
        .withHistoryRetentionMillis(0);
    try (RocksStore store = RocksStore.open(settings, clock);
        PostgresExporter exporter = export(store, url)) {
      EntityId entity = new EntityId("Stock", "s1");
      awaitWatermark(exporter, commit(store, entity, new Operation.Increment("qty", 1)));
      long held = exporter.statistics().watermark();
      // Holds the exporter's next batch back: its watermark write waits for this lock.
      try (Connection blocker = DriverManager.getConnection(url)) {
        blocker.setAutoCommit(false);
        try (Statement statement = blocker.createStatement()) {
          statement.execute("LOCK TABLE troupe_system_of_record IN ACCESS EXCLUSIVE MODE");
        }
        long last = 0;
        for (int i = 0; i < 40; i++) {
          last = commit(store, new EntityId("Stock", "t" + i), new Operation.Increment("qty", 1));
          clock.advance(5);
        }
        clock.advance(1_000);
        store.checkpointNow();
        assertEquals(held, exporter.statistics().watermark(), "the exporter is held back");
        for (int p = 0; p < store.partitionCount(); p++) {
          assertTrue(store.historyHorizon(p) <= held, "partition " + p + " truncated to "
              + store.historyHorizon(p) + ", past the watermark " + held);
        }
        blocker.rollback();
        awaitWatermark(exporter, last);
      }
      clock.advance(1_000);
      commit(store, entity, new Operation.Increment("qty", 1));
      store.checkpointNow();
      long highest = 0;
      for (int p = 0; p < store.partitionCount(); p++) {
        highest = Math.max(highest, store.historyHorizon(p));
      }
      assertTrue(highest > held, "the pin moved with the watermark: horizon " + highest);
    }
  }
}
