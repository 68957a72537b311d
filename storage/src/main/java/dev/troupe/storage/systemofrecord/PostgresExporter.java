package dev.troupe.storage.systemofrecord;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.storage.JournalEntry;
import dev.troupe.storage.Store;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.systemofrecord.ExportPlanner.Batch;
import dev.troupe.storage.systemofrecord.ExportPlanner.PartitionAhead;
import dev.troupe.storage.systemofrecord.ExportPlanner.PendingRecord;
import dev.troupe.storage.systemofrecord.TableMapping.Column;
import dev.troupe.storage.systemofrecord.TableMapping.SqlType;
import dev.troupe.storage.systemofrecord.TableMapping.TableShape;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The system-of-record exporter (docs/ARCHITECTURE.md, "System of record"): the thin shell that
 * tails the store's journal and keeps one PostgreSQL table per type equal to the entities' states
 * at its watermark. What to apply next is {@link ExportPlanner}'s decision, how a type becomes a
 * table {@link TableMapping}'s; this class does the I/O.
 *
 * <p><b>Invariants.</b> (1) The watermark row in PostgreSQL is written in the same PostgreSQL
 * transaction as the rows of the batch that advances it, so the tables always hold exactly the
 * states at the watermark (of every entity written at or below it), whatever crashes. (2) Every
 * row write is guarded by the state's version, so replaying a batch after a crash of either side
 * changes nothing. (3) The store keeps its journal above the watermark: the exporter holds a
 * snapshot pin at the watermark ({@link Store#pinSnapshot}), taken at construction at the store's
 * history horizon (everything retained then) and moved up after each batch, so truncation never
 * deletes a record the exporter has not applied; the same pin keeps the local replication log's
 * entries above the watermark ({@link dev.troupe.storage.ReplicationLog#truncate}), whose
 * decisions tell the planner where each multi-entity transaction ends, so that every batch is
 * a closed cut (no transaction half applied).
 *
 * <p><b>Concurrency.</b> One thread of its own ({@code troupe-system-of-record}); {@link
 * #statistics} from any thread; {@link #close} stops the thread and waits for it.
 *
 * <p><b>Recovery.</b> Nothing of its own is persisted in the store: after any failure (a lost
 * connection, a failed statement, a restart of the server) the exporter reads its watermark back
 * from PostgreSQL, positions its journal cursors after it ({@link Store#journalSequenceAfter}) and
 * goes on; a database without the watermark row, or with a watermark below the store's history
 * horizon or the local replication log's truncation (the journal or the decisions it needs are
 * gone), gets an export of every entity's state at one
 * timestamp first. A state it cannot map ({@link UnmappableException}) stops it, logged and
 * counted, never skipped.
 */
public final class PostgresExporter implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PostgresExporter.class);
  private static final String WATERMARK_ROW = "watermark";

  private final Store store;
  /** The data centre whose replication log origin holds this node's commits (0: unnamed). */
  private final int localDataCentreId;
  private final SystemOfRecordSettings settings;
  private final Function<EntityId, Optional<CompiledType>> types;
  private final Thread thread;
  private volatile boolean running = true;

  // Exporter thread only (and the constructor before it starts).
  private Store.Snapshot pin;
  private Connection connection;
  private long watermark = -1;
  private long[] cursors;
  /** The shapes the tables have in the database now, per type, as far as this connection knows. */
  private final Map<String, TableShape> tables = new HashMap<>();
  private long backoffMillis;
  /**
   * Records read ahead per partition: {@code batch-max-records}, doubled up to {@code
   * read-ahead-max-records} while a transaction's end lies beyond the reads, reset by a batch.
   */
  private int readLimit;

  // Published for metrics.
  private final AtomicLong rowsApplied = new AtomicLong();
  private final AtomicLong recordsApplied = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private volatile long publishedWatermark;
  /** The safe timestamp minus the oldest record not applied (hybrid-clock units); 0 caught up. */
  private volatile long lagTimestamp;
  /**
   * Milliseconds since the commit of the oldest record not applied yet (while a batch is in
   * flight), or that the last batch's oldest record waited until its PostgreSQL commit; 0 once
   * caught up.
   */
  private volatile long lagMillis;
  private volatile String stoppedBecause;
  private volatile boolean connected;

  /** What the exporter has done, for {@code /metrics}. */
  public record Statistics(long watermark, long lagTimestamp, long lagMillis, long rowsApplied,
      long recordsApplied, long batches, long errors, boolean connected, String stoppedBecause) {}

  private PostgresExporter(Store store, int localDataCentreId, SystemOfRecordSettings settings,
      Function<EntityId, Optional<CompiledType>> types) {
    this.store = store;
    this.localDataCentreId = localDataCentreId;
    this.readLimit = settings.batchMaxRecords();
    this.settings = settings;
    this.types = types;
    this.backoffMillis = settings.retryMinBackoffMillis();
    this.thread = new Thread(this::run, "troupe-system-of-record");
    thread.setDaemon(true);
  }

  /**
   * Checks the URL, pins the store's retained history, tries the database once, and starts the
   * exporter's thread. A database that cannot be reached now is retried by the thread (with
   * backoff); a URL that is not PostgreSQL's, a login refused or a database that does not exist is
   * a configuration error, refused here.
   *
   * @param localDataCentreId the store's data centre id ({@code StorageSettings#dataCentreId}, 0
   *     for an unnamed DC): the origin of its local replication log, which must be written
   *     ({@code StorageSettings#replicationLog}): its decisions tell which records are the parts of
   *     one transaction
   * @param types the type an entity is exported with, or empty for one not exported (Troupe's own
   *     reserved types)
   * @throws IllegalArgumentException with a message for the operator when the database is
   *     misconfigured
   */
  public static PostgresExporter start(Store store, int localDataCentreId,
      SystemOfRecordSettings settings, Function<EntityId, Optional<CompiledType>> types) {
    String url = settings.jdbcUrl();
    if (!url.startsWith("jdbc:postgresql:") || org.postgresql.Driver.parseURL(url, null) == null) {
      throw new IllegalArgumentException("--system-of-record: '" + url + "' is not a PostgreSQL"
          + " JDBC URL (e.g. jdbc:postgresql://127.0.0.1:5432/reports?user=troupe)");
    }
    PostgresExporter exporter = new PostgresExporter(store, localDataCentreId, settings, types);
    long horizon = 0;
    for (int p = 0; p < store.partitionCount(); p++) {
      horizon = Math.max(horizon, store.historyHorizon(p));
    }
    // Before any truncation can pass it: the watermark is not known yet.
    exporter.pin = store.pinSnapshot(horizon);
    try {
      exporter.connect();
    } catch (SQLException e) {
      String state = e.getSQLState() == null ? "" : e.getSQLState();
      if (state.startsWith("28") || state.equals("3D000")) {
        exporter.pin.close();
        throw new IllegalArgumentException("--system-of-record: PostgreSQL refused "
            + url.replaceAll("password=[^&]*", "password=...") + ": " + e.getMessage());
      }
      log.warn("system of record: PostgreSQL cannot be reached yet ({}); retrying with backoff",
          e.getMessage());
      exporter.closeConnection();
    }
    exporter.thread.start();
    return exporter;
  }

  public Statistics statistics() {
    return new Statistics(publishedWatermark, lagTimestamp, lagMillis, rowsApplied.get(),
        recordsApplied.get(), batches.get(), errors.get(), connected, stoppedBecause);
  }

  /** Stops the thread (a batch in flight is finished or rolled back) and releases the pin. */
  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(settings.socketTimeoutSeconds() + 5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ------------------------------------------------------------------------------ the loop

  private void run() {
    try {
      while (running) {
        try {
          if (connection == null) {
            connect();
          }
          if (watermark < 0) {
            resume();
          }
          boolean more = step();
          backoffMillis = settings.retryMinBackoffMillis();
          if (!more) {
            sleep(settings.pollIntervalMillis());
          }
        } catch (SQLException | TroupeException e) {
          if (!running) {
            break;
          }
          errors.incrementAndGet();
          log.warn("system of record: batch failed ({}); retrying in {} ms from the watermark"
              + " in PostgreSQL", e.getMessage(), backoffMillis);
          closeConnection();
          sleep(backoffMillis);
          backoffMillis = Math.min(backoffMillis * 2, settings.retryMaxBackoffMillis());
        } catch (UnmappableException e) {
          stop(e.getMessage());
          break;
        }
      }
    } catch (RuntimeException | Error e) {
      stop("unexpected failure: " + e);
      log.error("system of record: the exporter failed", e);
    } finally {
      closeConnection();
      if (pin != null) {
        pin.close();
      }
    }
  }

  private void stop(String reason) {
    errors.incrementAndGet();
    stoppedBecause = reason;
    log.error("system of record: the exporter stopped at watermark {}: {}", watermark, reason);
  }

  private void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      // close(): the loop checks `running`.
    }
  }

  private void connect() throws SQLException {
    Properties properties = new Properties();
    properties.setProperty("connectTimeout", Integer.toString(settings.connectTimeoutSeconds()));
    properties.setProperty("socketTimeout", Integer.toString(settings.socketTimeoutSeconds()));
    properties.setProperty("ApplicationName", "troupe-system-of-record");
    properties.setProperty("tcpKeepAlive", "true");
    Connection opened = DriverManager.getConnection(settings.jdbcUrl(), properties);
    try {
      opened.setAutoCommit(true);
      try (Statement statement = opened.createStatement()) {
        statement.execute("CREATE TABLE IF NOT EXISTS " + TableMapping.WATERMARK_TABLE
            + " (name text PRIMARY KEY, watermark bigint NOT NULL,"
            + " updated_at timestamptz NOT NULL DEFAULT now())");
      }
      opened.setAutoCommit(false);
      opened.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    } catch (SQLException e) {
      opened.close();
      throw e;
    }
    connection = opened;
    connected = true;
    watermark = -1; // read back from the database before anything is applied
    tables.clear();
  }

  private void closeConnection() {
    connected = false;
    watermark = -1;
    tables.clear();
    if (connection != null) {
      try {
        connection.close();
      } catch (SQLException ignored) {
        // Lost already.
      }
      connection = null;
    }
  }

  /** Reads the watermark back and positions the cursors after it (or runs the initial export). */
  private void resume() throws SQLException, UnmappableException {
    long stored = -1;
    try (PreparedStatement read = connection.prepareStatement(
        "SELECT watermark FROM " + TableMapping.WATERMARK_TABLE + " WHERE name = ?")) {
      read.setString(1, WATERMARK_ROW);
      try (ResultSet result = read.executeQuery()) {
        if (result.next()) {
          stored = result.getLong(1);
        }
      }
    }
    connection.commit();
    long horizon = 0;
    for (int p = 0; p < store.partitionCount(); p++) {
      horizon = Math.max(horizon, store.historyHorizon(p));
    }
    // The local replication log above the watermark is needed too (its decisions say where a
    // transaction ends); the pin holds it, but one truncated before the pin was taken (the
    // exporter was off while causal-message delivery truncated it) is as gone as the journal.
    horizon = Math.max(horizon,
        store.replicationLog().truncatedVector().get(localDataCentreId));
    if (stored >= 0 && stored < horizon) {
      // The journal above the watermark is gone (the exporter was off, or behind when the node
      // restarted, for longer than troupe.storage.history-retention-millis): the states are not.
      log.warn("system of record: the journal or the local replication log is truncated up to"
          + " {}, past the watermark {}; exporting every entity again", horizon, stored);
      stored = -1;
    }
    if (stored < 0) {
      stored = initialExport();
    }
    movePin(stored);
    cursors = new long[store.partitionCount()];
    for (int p = 0; p < cursors.length; p++) {
      cursors[p] = store.journalSequenceAfter(p, stored);
    }
    watermark = stored;
    publishedWatermark = stored;
    log.info("system of record: exporting from watermark {}", stored);
  }

  /**
   * Exports every entity's state at one safe timestamp T, a page per PostgreSQL transaction, and
   * writes the watermark T with the last page: a crash before that redoes it (every row is
   * guarded by its version).
   */
  private long initialExport() throws SQLException, UnmappableException {
    long at = store.replicationLog().localSafeTimestamp();
    movePin(at);
    EntityId after = null;
    long exported = 0;
    while (true) {
      List<EntityId> page = store.entities(after, settings.initialExportPageEntities());
      Map<EntityId, Integer> entities = new LinkedHashMap<>();
      for (EntityId entity : page) {
        entities.put(entity, 0); // the origin of a state read whole is not known: 0
      }
      exported += applyStates(entities, at);
      boolean last = page.size() < settings.initialExportPageEntities();
      if (last) {
        writeWatermark(at);
      }
      connection.commit();
      if (last) {
        log.info("system of record: initial export of {} rows at {}", exported, at);
        return at;
      }
      after = page.getLast();
    }
  }

  private void movePin(long timestamp) {
    if (pin != null && pin.timestamp() == timestamp) {
      return;
    }
    Store.Snapshot moved = store.pinSnapshot(timestamp);
    if (pin != null) {
      pin.close();
    }
    pin = moved;
  }

  /** Applies one batch if there is one; returns whether more may be waiting. */
  private boolean step() throws SQLException, UnmappableException {
    long safe = store.replicationLog().localSafeTimestamp();
    List<PartitionAhead> ahead = new ArrayList<>(cursors.length);
    for (int p = 0; p < cursors.length; p++) {
      List<JournalEntry> entries = store.readJournal(p, cursors[p], readLimit);
      List<PendingRecord> records = new ArrayList<>(entries.size());
      for (JournalEntry entry : entries) {
        List<EntityId> written = new ArrayList<>(entry.record().writes().size());
        for (EntityWrite write : entry.record().writes()) {
          written.add(write.entity());
        }
        records.add(new PendingRecord(p, entry.sequence(), entry.record().transactionId(),
            entry.record().commitTimestamp(), entry.record().originDc(), written));
      }
      ahead.add(new PartitionAhead(records, entries.size() == readLimit));
    }
    // After the safe timestamp (its upToTimestamp is at least that unless cut): every decision
    // and part up to the bound is in it. A part per entity a record wrote, a decision per
    // multi-entity transaction: twice the read-ahead covers the batch's records as a rule, and a
    // cut read only lowers the bound (ReadFurther doubles it when that leaves nothing closed).
    int logLimit = (int) Math.min(Integer.MAX_VALUE, 2L * readLimit + 16);
    ReplicationBatch localLog =
        store.replicationLog().read(localDataCentreId, watermark, logLimit);
    boolean atLimit = readLimit >= settings.readAheadMaxRecords();
    ExportPlanner.Plan plan = ExportPlanner.next(watermark, safe, ahead, localLog,
        settings.batchMaxRecords(), atLimit);
    if (plan instanceof ExportPlanner.ReadFurther) {
      // The transaction in the way ends beyond the reads: read more at once.
      readLimit = (int) Math.min(2L * readLimit, settings.readAheadMaxRecords());
      return true;
    }
    if (!(plan instanceof Batch batch)) {
      long oldest = Long.MAX_VALUE;
      for (PartitionAhead partition : ahead) {
        for (PendingRecord record : partition.records()) {
          if (record.commitTimestamp() > watermark && record.commitTimestamp() <= safe) {
            oldest = Math.min(oldest, record.commitTimestamp());
          }
        }
      }
      // Waiting for a transaction's last part: behind by the oldest record waiting.
      lagTimestamp = oldest == Long.MAX_VALUE ? 0 : safe - oldest;
      lagMillis = oldest == Long.MAX_VALUE ? 0 : ageMillis(oldest);
      return false;
    }
    if (batch.cutInside()) {
      log.warn("system of record: a transaction spans more than read-ahead-max-records ({})"
          + " records; the batch up to {} ends inside it", settings.readAheadMaxRecords(),
          batch.upTo());
    }
    // Behind by the age of the oldest record not applied yet, until this batch commits.
    lagTimestamp = Math.max(0, safe - batch.firstCommitTimestamp());
    lagMillis = ageMillis(batch.firstCommitTimestamp());
    long rows = applyStates(batch.entities(), batch.upTo());
    writeWatermark(batch.upTo());
    connection.commit();
    // The batch's oldest record waited this long to be in the tables: a visibility delay.
    lagMillis = ageMillis(batch.firstCommitTimestamp());
    watermark = batch.upTo();
    publishedWatermark = watermark;
    batch.nextSequences().forEach((partition, next) -> cursors[partition] = next);
    movePin(watermark);
    rowsApplied.addAndGet(rows);
    recordsApplied.addAndGet(batch.records());
    batches.incrementAndGet();
    readLimit = settings.batchMaxRecords();
    return batch.upTo() < safe;
  }

  /** Milliseconds of the node's clock since the hybrid-clock timestamp (0 if ahead of it). */
  private static long ageMillis(long timestamp) {
    return Math.max(0, System.currentTimeMillis() - HybridLogicalClock.toMillis(timestamp));
  }

  /**
   * Writes each entity's state at {@code at} into its type's table (creating or widening the
   * table first), guarded by version, in the open transaction; returns the rows written or
   * deleted.
   */
  private long applyStates(Map<EntityId, Integer> entities, long at)
      throws SQLException, UnmappableException {
    Map<String, List<Object[]>> upserts = new LinkedHashMap<>();
    Map<String, List<Object[]>> deletions = new LinkedHashMap<>();
    Map<String, TableShape> shapes = new HashMap<>();
    for (Map.Entry<EntityId, Integer> entry : entities.entrySet()) {
      EntityId entity = entry.getKey();
      Optional<CompiledType> type = types.apply(entity);
      if (type.isEmpty()) {
        continue; // Troupe's own entities
      }
      TableShape shape = shapes.get(entity.type());
      if (shape == null) {
        shape = TableMapping.shape(type.get());
        shapes.put(entity.type(), shape);
      }
      EntityState state = store.readAt(entity, at);
      if (state.exists()) {
        ObjectNode rendered = type.get().render(state);
        List<Object> values = TableMapping.row(shape, entity.id(), rendered);
        Object[] row = new Object[3 + values.size()];
        row[0] = entity.id();
        row[1] = state.version();
        row[2] = entry.getValue();
        for (int i = 0; i < values.size(); i++) {
          row[3 + i] = values.get(i);
        }
        upserts.computeIfAbsent(entity.type(), ignored -> new ArrayList<>()).add(row);
      } else if (state.version() > 0) {
        deletions.computeIfAbsent(entity.type(), ignored -> new ArrayList<>())
            .add(new Object[] {entity.id(), state.version()});
      }
    }
    long rows = 0;
    for (TableShape shape : shapes.values()) {
      ensureTable(shape);
      List<Object[]> written = upserts.getOrDefault(shape.type(), List.of());
      if (!written.isEmpty()) {
        try (PreparedStatement upsert = connection.prepareStatement(TableMapping.upsert(shape))) {
          for (Object[] row : written) {
            upsert.setString(1, (String) row[0]);
            upsert.setLong(2, (Long) row[1]);
            upsert.setInt(3, (Integer) row[2]);
            for (int i = 0; i < shape.columns().size(); i++) {
              bind(upsert, 4 + i, shape.columns().get(i).type(), row[3 + i]);
            }
            upsert.addBatch();
          }
          upsert.executeBatch();
        }
        rows += written.size();
      }
      List<Object[]> deleted = deletions.getOrDefault(shape.type(), List.of());
      if (!deleted.isEmpty()) {
        try (PreparedStatement delete = connection.prepareStatement(TableMapping.delete(shape))) {
          for (Object[] row : deleted) {
            delete.setString(1, (String) row[0]);
            delete.setLong(2, (Long) row[1]);
            delete.addBatch();
          }
          delete.executeBatch();
        }
        rows += deleted.size();
      }
    }
    return rows;
  }

  private static void bind(PreparedStatement statement, int index, SqlType type, Object value)
      throws SQLException {
    if (value == null) {
      statement.setNull(index, switch (type) {
        case TEXT, JSONB -> Types.VARCHAR;
        case BIGINT -> Types.BIGINT;
        case INTEGER -> Types.INTEGER;
        case NUMERIC -> Types.NUMERIC;
        case BOOLEAN -> Types.BOOLEAN;
      });
      return;
    }
    switch (type) {
      case TEXT, JSONB -> statement.setString(index, (String) value);
      case BIGINT, INTEGER -> statement.setLong(index, (Long) value);
      case NUMERIC -> statement.setBigDecimal(index, (BigDecimal) value);
      case BOOLEAN -> statement.setBoolean(index, (Boolean) value);
    }
  }

  /**
   * Makes the type's table have every column of {@code shape}, in the open transaction (so a
   * rolled-back batch rolls its DDL back too, and {@link #tables} is cleared with the
   * connection).
   */
  private void ensureTable(TableShape shape) throws SQLException, UnmappableException {
    if (shape.equals(tables.get(shape.type()))) {
      return;
    }
    Map<String, SqlType> existing = new HashMap<>();
    boolean exists = false;
    try (PreparedStatement columns = connection.prepareStatement(
        "SELECT column_name, data_type FROM information_schema.columns"
            + " WHERE table_schema = current_schema() AND table_name = ?")) {
      columns.setString(1, shape.type());
      try (ResultSet result = columns.executeQuery()) {
        while (result.next()) {
          exists = true;
          existing.put(result.getString(1),
              SqlType.fromInformationSchema(result.getString(2)));
        }
      }
    }
    try (Statement statement = connection.createStatement()) {
      if (!exists) {
        statement.execute(TableMapping.createTable(shape));
      } else {
        for (Column column : TableMapping.columnsToAdd(shape, existing)) {
          statement.execute(TableMapping.addColumn(shape, column));
          log.info("system of record: added column \"{}\" to table \"{}\"", column.name(),
              shape.type());
        }
      }
    }
    tables.put(shape.type(), shape);
  }

  private void writeWatermark(long timestamp) throws SQLException {
    try (PreparedStatement write = connection.prepareStatement(
        "INSERT INTO " + TableMapping.WATERMARK_TABLE + " (name, watermark, updated_at)"
            + " VALUES (?, ?, now()) ON CONFLICT (name) DO UPDATE"
            + " SET watermark = excluded.watermark, updated_at = now()")) {
      write.setString(1, WATERMARK_ROW);
      write.setLong(2, timestamp);
      write.executeUpdate();
    }
  }
}
