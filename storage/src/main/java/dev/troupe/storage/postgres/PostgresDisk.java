package dev.troupe.storage.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.DiskException;
import dev.troupe.storage.FencedException;
import dev.troupe.storage.KeyValueDisk;
import dev.troupe.storage.RocksDisk;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link KeyValueDisk} in a PostgreSQL database, which the nodes of one data centre share
 * (issue 18): the same engine ({@link dev.troupe.storage.RocksStore}) runs on it as on RocksDB.
 *
 * <p><b>Schema</b> (created idempotently by {@link #open}, under an advisory lock so that nodes
 * starting together do not race): one table per {@link Column}, {@code troupe_<column>(key bytea
 * primary key, value bytea)}; {@code troupe_partition_owners(partition, owner_node, epoch)}, the
 * owner epochs; {@code troupe_schema(format_version)}, one row, so that a later change of the
 * layout is detected instead of misread ({@link #FORMAT_VERSION}). A bytea primary key is a btree
 * ordered by {@code memcmp} and then length: exactly the unsigned lexicographic order the contract
 * asks for, so range reads need no other index.
 *
 * <p><b>Writes.</b> One {@link Batch} is one PostgreSQL transaction (READ COMMITTED): first the
 * fences ({@code SELECT ... FOR SHARE} of the partitions' owner rows, compared with the batch's
 * epochs: a mismatch rolls back and throws {@link FencedException}), then per column, in column
 * order, the range deletions, the point deletions and the upserts, each one statement over arrays
 * ({@code unnest}), all sent in one round trip, then the commit: a group commit costs three round
 * trips (two without fences) and one flush of PostgreSQL's log. Within a batch the operations on one key keep their order
 * because the batch folds them as it receives them: a later put or deletion of a key replaces the
 * earlier one, and a range deletion drops the pending operations it covers, so what remains
 * commutes (range deletions first, then keys whose last operation came after every range that
 * covers them). Keys are applied in their order, so two batches touching the same keys lock them
 * in the same order.
 *
 * <p><b>Durability.</b> A synced write commits with {@code synchronous_commit = on} (set on every
 * connection of the pool): it returns once PostgreSQL flushed its write-ahead log up to the
 * commit record, which covers every transaction committed before it. An unsynced write commits
 * with {@code SET LOCAL synchronous_commit = off}: PostgreSQL's asynchronous commit, which after a
 * crash loses only transactions at the end of its log, the contract's prefix rule. {@link
 * #flushWriteAheadLog flushWriteAheadLog(true)} commits a transaction that was given a
 * transaction id (so its commit writes a record and, synchronous, flushes the log up to it):
 * every earlier batch is durable when it returns. Atomicity is PostgreSQL's: a transaction is
 * wholly committed or not at all, also after a crash.
 *
 * <p><b>Ownership.</b> {@link #acquirePartition} is one upsert of the owner row (epoch + 1) in a
 * synchronous transaction of its own. Its row lock waits for every fenced batch that holds the
 * row {@code FOR SHARE}: such a batch commits before the new epoch does (its reads by the new
 * owner see it) or, arriving after, reads the new epoch and is refused. A fence on a partition
 * that has no owner row yet (epoch 0) first inserts the row at epoch 0, so that it has a row to
 * lock too.
 *
 * <p><b>Reads.</b> A point read or a {@code multiGet} without a snapshot is one statement, which
 * reads one consistent point by itself. A {@link Snapshot} is a REPEATABLE READ, READ ONLY
 * transaction held open on a connection of its own, its snapshot taken when it is created; reads
 * and cursors at it run in that transaction. A cursor without a snapshot opens such a transaction
 * for itself when it is created (the contract: it reads the state as of its creation) and ends it
 * when it is closed. A cursor reads keyset pages, {@code key >= ? AND key < upper ORDER BY key
 * LIMIT n}, continuing after the last key read; {@code seekForPrev} is {@code key <= ? AND key >=
 * lower ORDER BY key DESC LIMIT 1}. Pages start at 16 rows and double up to {@link
 * PostgresDiskSettings#cursorPageRows}: most cursors of the engine read a handful of keys.
 *
 * <p><b>Failures.</b> Every SQL failure is a {@link DiskException} (cursors: an {@link
 * UncheckedIOException} from {@link Cursor#isValid}, as the contract says; {@link #snapshot},
 * which declares no checked exception, throws an {@link UncheckedIOException}), never swallowed; a
 * connection lost during a commit is an unknown outcome, which the engine treats as a failure of
 * the store. PostgreSQL's own integrity errors ({@code XX001} data_corrupted, {@code XX002}
 * index_corrupted: a page that failed its checksum under {@code initdb --data-checksums}) throw
 * {@link CorruptDataException}, as RocksDB's failed block checksums do. Every operation that
 * needs a connection waits at most {@link PostgresDiskSettings#connectionTimeoutMillis} for one.
 *
 * <p>Thread-safe (the pool is); a batch, a snapshot and a cursor belong to one thread at a time.
 */
public final class PostgresDisk implements KeyValueDisk {
  /** The layout version in {@code troupe_schema}; a database with another one is refused. */
  public static final int FORMAT_VERSION = 1;

  /** Any constant; keeps two nodes from creating the schema at the same time. */
  private static final long SCHEMA_LOCK = 0x7472_6f75_7065_0018L;

  private static final int FIRST_PAGE_ROWS = 16;

  private static final String OWNERS = "troupe_partition_owners";

  private final HikariDataSource pool;
  private final PostgresDiskSettings settings;
  /** Per column (by ordinal): the SQL of each access, built once. */
  private final ColumnSql[] sql;

  private PostgresDisk(HikariDataSource pool, PostgresDiskSettings settings) {
    this.pool = pool;
    this.settings = settings;
    this.sql = new ColumnSql[Column.values().length];
    for (Column column : Column.values()) {
      sql[column.ordinal()] = new ColumnSql(tableName(column));
    }
  }

  /** The table of {@code column}: {@code troupe_} and RocksDB's column family name. */
  public static String tableName(Column column) {
    return "troupe_" + RocksDisk.columnFamilyName(column);
  }

  /**
   * Connects to the database of {@code settings}, creating the schema if it is not there, and
   * checks its format version.
   *
   * @throws UncheckedIOException if the database cannot be reached or the schema not created
   * @throws IllegalStateException if the database holds another format version
   */
  public static PostgresDisk open(PostgresDiskSettings settings) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(settings.jdbcUrl());
    if (!settings.user().isEmpty()) {
      config.setUsername(settings.user());
    }
    if (!settings.password().isEmpty()) {
      config.setPassword(settings.password());
    }
    config.setPoolName("troupe-postgres-disk");
    config.setMaximumPoolSize(settings.maximumPoolSize());
    config.setMinimumIdle(Math.min(4, settings.maximumPoolSize()));
    config.setConnectionTimeout(settings.connectionTimeoutMillis());
    config.setAutoCommit(true);
    // Every transaction's isolation and durability are set here or by the transaction itself,
    // never left to the server's defaults (which an operator may have changed).
    config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    config.setConnectionInitSql("SET synchronous_commit = on");
    HikariDataSource pool;
    try {
      pool = new HikariDataSource(config);
    } catch (RuntimeException e) {
      throw new UncheckedIOException(new IOException("cannot connect to the PostgreSQL store at "
          + settings.jdbcUrl() + ": " + e.getMessage(), e));
    }
    PostgresDisk disk = new PostgresDisk(pool, settings);
    try {
      disk.createSchema();
      return disk;
    } catch (DiskException e) {
      pool.close();
      throw new UncheckedIOException(new IOException("cannot prepare the PostgreSQL store at "
          + settings.jdbcUrl() + ": " + e.getMessage(), e));
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
  }

  public PostgresDiskSettings settings() {
    return settings;
  }

  private void createSchema() throws DiskException {
    try (Connection connection = connection()) {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        statement.execute("SELECT pg_advisory_xact_lock(" + SCHEMA_LOCK + ")");
        for (Column column : Column.values()) {
          statement.execute("CREATE TABLE IF NOT EXISTS " + tableName(column)
              + " (key bytea PRIMARY KEY, value bytea NOT NULL)");
        }
        statement.execute("CREATE TABLE IF NOT EXISTS " + OWNERS
            + " (partition integer PRIMARY KEY, owner_node integer, epoch bigint NOT NULL)");
        statement.execute("CREATE TABLE IF NOT EXISTS troupe_schema (singleton boolean PRIMARY KEY"
            + " DEFAULT true CHECK (singleton), format_version integer NOT NULL)");
        statement.execute("INSERT INTO troupe_schema (format_version) VALUES (" + FORMAT_VERSION
            + ") ON CONFLICT (singleton) DO NOTHING");
        int version;
        try (ResultSet result = statement.executeQuery("SELECT format_version FROM troupe_schema")) {
          result.next();
          version = result.getInt(1);
        }
        if (version != FORMAT_VERSION) {
          connection.rollback();
          throw new IllegalStateException("the PostgreSQL store at " + settings.jdbcUrl()
              + " has format version " + version + "; this Troupe reads format version "
              + FORMAT_VERSION + " only");
        }
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        rollbackAfter(connection, e);
        throw e;
      }
    } catch (SQLException e) {
      throw failure("creating the schema", e);
    }
  }

  // ------------------------------------------------------------------------------------ writes

  /**
   * A database server: PostgreSQL can crash and restart (losing its asynchronous commits) while
   * this process runs on, its pool reconnecting without an error.
   */
  @Override
  public boolean crashesOnlyWithThisProcess() {
    return false;
  }

  @Override
  public Batch newBatch() {
    return new PostgresBatch();
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    PostgresBatch operations = (PostgresBatch) batch;
    try (Connection connection = connection()) {
      connection.setAutoCommit(false);
      try {
        checkFences(connection, operations.fences);
        applyWrites(connection, operations, sync);
        connection.commit();
      } catch (SQLException | DiskException | RuntimeException e) {
        rollbackAfter(connection, e);
        throw e;
      }
    } catch (SQLException e) {
      throw failure("writing a batch", e);
    }
  }

  /** Locks the fenced partitions' owner rows (FOR SHARE) and compares their epochs. */
  private void checkFences(Connection connection, Map<Integer, Long> fences)
      throws SQLException, FencedException {
    if (fences.isEmpty()) {
      return;
    }
    Map<Integer, Long> current = lockOwnerEpochs(connection, fences.keySet());
    List<Integer> unowned = new ArrayList<>();
    for (Map.Entry<Integer, Long> fence : fences.entrySet()) {
      if (!current.containsKey(fence.getKey()) && fence.getValue() == 0) {
        unowned.add(fence.getKey());
      }
    }
    if (!unowned.isEmpty()) {
      // Epoch 0 holds while nobody acquired the partition: give it a row at 0 to lock, which an
      // acquisition then waits for (or, if one got there first, the row shows its epoch).
      try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + OWNERS
          + " (partition, owner_node, epoch) SELECT unnest(?::integer[]), NULL::integer, 0::bigint"
          + " ON CONFLICT (partition) DO NOTHING")) {
        insert.setArray(1, connection.createArrayOf("integer", unowned.toArray(Integer[]::new)));
        insert.executeUpdate();
      }
      current = lockOwnerEpochs(connection, fences.keySet());
    }
    for (Map.Entry<Integer, Long> fence : fences.entrySet()) {
      long epoch = current.getOrDefault(fence.getKey(), 0L);
      if (epoch != fence.getValue()) {
        throw new FencedException(fence.getKey(), fence.getValue(), epoch);
      }
    }
  }

  private static Map<Integer, Long> lockOwnerEpochs(Connection connection,
      java.util.Set<Integer> partitions) throws SQLException {
    Map<Integer, Long> epochs = new HashMap<>();
    try (PreparedStatement select = connection.prepareStatement("SELECT partition, epoch FROM "
        + OWNERS + " WHERE partition = ANY(?::integer[]) ORDER BY partition FOR SHARE")) {
      select.setArray(1, connection.createArrayOf("integer", partitions.toArray(Integer[]::new)));
      try (ResultSet result = select.executeQuery()) {
        while (result.next()) {
          epochs.put(result.getInt(1), result.getLong(2));
        }
      }
    }
    return epochs;
  }

  /**
   * Every write of the batch, as one multi-statement query sent in one round trip (the driver
   * sends its statements together and reads their results after): per column, in column order,
   * the range deletions, the point deletions, the upserts. Within the transaction, so all or none.
   */
  private void applyWrites(Connection connection, PostgresBatch batch, boolean sync)
      throws SQLException {
    StringBuilder query = new StringBuilder();
    List<Object> parameters = new ArrayList<>();
    if (!sync) {
      query.append("SET LOCAL synchronous_commit = off;\n");
    }
    for (Column column : Column.values()) {
      ColumnOperations pending = batch.columns[column.ordinal()];
      if (pending == null) {
        continue;
      }
      ColumnSql table = sql[column.ordinal()];
      for (byte[][] range : pending.ranges) {
        query.append(table.deleteRange).append(";\n");
        parameters.add(range[0]);
        parameters.add(range[1]);
      }
      List<byte[]> deleted = new ArrayList<>();
      List<byte[]> putKeys = new ArrayList<>();
      List<byte[]> putValues = new ArrayList<>();
      for (Map.Entry<byte[], byte[]> entry : pending.keys.entrySet()) {
        if (entry.getValue() == DELETED) {
          deleted.add(entry.getKey());
        } else {
          putKeys.add(entry.getKey());
          putValues.add(entry.getValue());
        }
      }
      if (!deleted.isEmpty()) {
        query.append(table.deleteKeys).append(";\n");
        parameters.add(byteaArray(connection, deleted));
      }
      if (!putKeys.isEmpty()) {
        query.append(table.upsert).append(";\n");
        parameters.add(byteaArray(connection, putKeys));
        parameters.add(byteaArray(connection, putValues));
      }
    }
    if (query.isEmpty()) {
      return;
    }
    try (PreparedStatement statement = connection.prepareStatement(query.toString())) {
      for (int i = 0; i < parameters.size(); i++) {
        if (parameters.get(i) instanceof byte[] bytes) {
          statement.setBytes(i + 1, bytes);
        } else {
          statement.setArray(i + 1, (Array) parameters.get(i));
        }
      }
      statement.execute();
      // Every statement's result was read with the first: an error in any was thrown above.
      while (statement.getMoreResults() || statement.getUpdateCount() != -1) {
        // drain
      }
    }
  }

  private static Array byteaArray(Connection connection, List<byte[]> values) throws SQLException {
    return connection.createArrayOf("bytea", values.toArray(byte[][]::new));
  }

  @Override
  public void flushWriteAheadLog(boolean sync) throws DiskException {
    if (!sync) {
      return; // PostgreSQL's WAL writer writes the log out by itself (wal_writer_delay)
    }
    try (Connection connection = connection()) {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        // A transaction id makes the commit write a record; committed synchronously, it returns
        // once the log is flushed up to that record, past every batch written before.
        statement.execute("SELECT pg_current_xact_id()");
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        rollbackAfter(connection, e);
        throw e;
      }
    } catch (SQLException e) {
      throw failure("flushing the write-ahead log", e);
    }
  }

  // --------------------------------------------------------------------------------- ownership

  @Override
  public long acquirePartition(int partition, int nodeId) throws DiskException {
    try (Connection connection = connection();
        PreparedStatement upsert = connection.prepareStatement("INSERT INTO " + OWNERS
            + " (partition, owner_node, epoch) VALUES (?, ?, 1) ON CONFLICT (partition) DO UPDATE"
            + " SET owner_node = EXCLUDED.owner_node, epoch = " + OWNERS + ".epoch + 1"
            + " RETURNING epoch")) {
      // One statement in autocommit: its own transaction, committed synchronously (the pool's
      // synchronous_commit = on), after the row lock let every fenced batch holding it finish.
      upsert.setInt(1, partition);
      upsert.setInt(2, nodeId);
      try (ResultSet result = upsert.executeQuery()) {
        result.next();
        return result.getLong(1);
      }
    } catch (SQLException e) {
      throw failure("acquiring partition " + partition, e);
    }
  }

  @Override
  public long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch)
      throws DiskException {
    // One statement in autocommit, as acquirePartition: the row lock orders it after a fenced
    // batch in flight, and the WHERE re-reads the epoch after that lock (READ COMMITTED's
    // re-check of an updated row), so it compares with the latest epoch. A partition without a
    // row has epoch 0: inserted only when 0 is what is expected.
    String sql = expectedEpoch == 0
        ? "INSERT INTO " + OWNERS + " (partition, owner_node, epoch) VALUES (?, ?, 1)"
            + " ON CONFLICT (partition) DO UPDATE SET owner_node = EXCLUDED.owner_node, epoch = "
            + OWNERS + ".epoch + 1 WHERE " + OWNERS + ".epoch = 0 RETURNING epoch"
        : "UPDATE " + OWNERS + " SET owner_node = ?, epoch = epoch + 1"
            + " WHERE partition = ? AND epoch = ? RETURNING epoch";
    try (Connection connection = connection();
        PreparedStatement statement = connection.prepareStatement(sql)) {
      if (expectedEpoch == 0) {
        statement.setInt(1, partition);
        statement.setInt(2, nodeId);
      } else {
        statement.setInt(1, nodeId);
        statement.setInt(2, partition);
        statement.setLong(3, expectedEpoch);
      }
      try (ResultSet result = statement.executeQuery()) {
        return result.next() ? result.getLong(1) : 0;
      }
    } catch (SQLException e) {
      throw failure("acquiring partition " + partition + " from epoch " + expectedEpoch, e);
    }
  }

  @Override
  public PartitionOwner ownerOf(int partition) throws DiskException {
    try (Connection connection = connection();
        PreparedStatement select = connection.prepareStatement(
            "SELECT owner_node, epoch FROM " + OWNERS + " WHERE partition = ?")) {
      select.setInt(1, partition);
      try (ResultSet result = select.executeQuery()) {
        if (!result.next() || result.getLong(2) == 0) {
          return null; // no row, or only the placeholder of a fence at epoch 0
        }
        return new PartitionOwner(result.getInt(1), result.getLong(2));
      }
    } catch (SQLException e) {
      throw failure("reading the owner of partition " + partition, e);
    }
  }

  // ------------------------------------------------------------------------------------- reads

  @Override
  public byte[] get(Column column, byte[] key) throws DiskException {
    try (Connection connection = connection();
        PreparedStatement select = connection.prepareStatement(sql[column.ordinal()].get)) {
      select.setBytes(1, key);
      try (ResultSet result = select.executeQuery()) {
        return result.next() ? result.getBytes(1) : null;
      }
    } catch (SQLException e) {
      throw failure("reading " + tableName(column), e);
    }
  }

  @Override
  public List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot)
      throws DiskException {
    if (snapshot != null) {
      PostgresSnapshot at = (PostgresSnapshot) snapshot;
      try {
        return multiGet(at.connection(), column, keys);
      } catch (SQLException e) {
        throw failure("reading " + tableName(column) + " at a snapshot", e);
      }
    }
    try (Connection connection = connection()) {
      return multiGet(connection, column, keys);
    } catch (SQLException e) {
      throw failure("reading " + tableName(column), e);
    }
  }

  private List<byte[]> multiGet(Connection connection, Column column, List<byte[]> keys)
      throws SQLException {
    Map<ByteBuffer, byte[]> found = new HashMap<>();
    try (PreparedStatement select = connection.prepareStatement(sql[column.ordinal()].multiGet)) {
      select.setArray(1, byteaArray(connection, keys));
      try (ResultSet result = select.executeQuery()) {
        while (result.next()) {
          found.put(ByteBuffer.wrap(result.getBytes(1)), result.getBytes(2));
        }
      }
    }
    List<byte[]> values = new ArrayList<>(keys.size());
    for (byte[] key : keys) {
      byte[] value = found.get(ByteBuffer.wrap(key));
      // A key asked twice gets its own copy each time (callers may keep both).
      values.add(value == null ? null : value.clone());
    }
    return values;
  }

  @Override
  public Snapshot snapshot() {
    try {
      return new PostgresSnapshot(readTransaction());
    } catch (DiskException e) {
      // The contract's snapshot() does not throw a checked exception: as an I/O failure.
      throw new UncheckedIOException(new IOException(e.getMessage(), e));
    }
  }

  @Override
  public Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound) {
    if (snapshot != null) {
      return new PostgresCursor(sql[column.ordinal()], ((PostgresSnapshot) snapshot).connection(),
          false, null, lowerBound, upperBound);
    }
    try {
      return new PostgresCursor(sql[column.ordinal()], readTransaction(), true, null, lowerBound,
          upperBound);
    } catch (DiskException e) {
      // Cursors do not throw on creation: this one reports the failure from isValid.
      return new PostgresCursor(sql[column.ordinal()], null, false, e, lowerBound, upperBound);
    }
  }

  /**
   * A connection in a REPEATABLE READ, READ ONLY transaction whose snapshot is already taken (by
   * its first query, here): what it reads is the state as of this call.
   */
  private Connection readTransaction() throws DiskException {
    Connection connection = connection();
    try {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        // One round trip: the driver sends BEGIN with both statements.
        statement.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SELECT 1");
      }
      return connection;
    } catch (SQLException e) {
      endReadTransaction(connection);
      throw failure("starting a read snapshot", e);
    }
  }

  /**
   * Ends a read transaction and returns its connection to the pool. A read-only transaction has
   * nothing to lose: if the rollback fails the connection is broken, and the pool drops it.
   */
  private void endReadTransaction(Connection connection) {
    try {
      connection.rollback();
    } catch (SQLException e) {
      pool.evictConnection(connection);
    }
    try {
      connection.close();
    } catch (SQLException e) {
      pool.evictConnection(connection);
    }
  }

  @Override
  public void close() {
    pool.close();
  }

  // ----------------------------------------------------------------------------------- support

  private Connection connection() throws DiskException {
    try {
      return pool.getConnection();
    } catch (SQLException e) {
      throw new DiskException("no PostgreSQL connection within "
          + settings.connectionTimeoutMillis() + " ms (troupe.storage.postgres."
          + "connection-timeout-millis; a pool of " + settings.maximumPoolSize()
          + " connections, troupe.storage.postgres.maximum-pool-size, all in use or the server"
          + " unreachable): " + e.getMessage(), e);
    }
  }

  private static void rollbackAfter(Connection connection, Exception failure) {
    try {
      connection.rollback();
    } catch (SQLException rollback) {
      failure.addSuppressed(rollback);
    }
  }

  /**
   * A SQL failure as the contract's exception: {@link CorruptDataException} (thrown) for
   * PostgreSQL's data_corrupted and index_corrupted errors, else a {@link DiskException}.
   */
  private static DiskException failure(String what, SQLException e) {
    String state = e.getSQLState();
    if ("XX001".equals(state) || "XX002".equals(state)) {
      throw new CorruptDataException("PostgreSQL reports damaged data while " + what + ": "
          + e.getMessage(), e);
    }
    return new DiskException(what + " failed in PostgreSQL: " + e.getMessage(), e);
  }

  /** The SQL of one column's table. */
  private static final class ColumnSql {
    final String table;
    final String get;
    final String multiGet;
    final String upsert;
    final String deleteKeys;
    final String deleteRange;

    ColumnSql(String table) {
      this.table = table;
      this.get = "SELECT value FROM " + table + " WHERE key = ?";
      this.multiGet = "SELECT key, value FROM " + table + " WHERE key = ANY(?::bytea[])";
      this.upsert = "INSERT INTO " + table + " (key, value) SELECT * FROM unnest(?::bytea[],"
          + " ?::bytea[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
      this.deleteKeys = "DELETE FROM " + table + " WHERE key = ANY(?::bytea[])";
      this.deleteRange = "DELETE FROM " + table + " WHERE key >= ? AND key < ?";
    }

    /** Keys at or after (or after) {@code ?}, below an optional upper bound, ascending. */
    String forward(boolean inclusive, boolean upper) {
      return "SELECT key, value FROM " + table + " WHERE key " + (inclusive ? ">=" : ">") + " ?"
          + (upper ? " AND key < ?" : "") + " ORDER BY key LIMIT ?";
    }

    /** The last key at or before {@code ?}, at or above an optional lower bound. */
    String backward(boolean lower) {
      return "SELECT key, value FROM " + table + " WHERE key <= ?"
          + (lower ? " AND key >= ?" : "") + " ORDER BY key DESC LIMIT 1";
    }
  }

  // --------------------------------------------------------------------------------- batches

  /** The value that marks a pending deletion (compared by identity). */
  private static final byte[] DELETED = new byte[0];

  /** What a batch does to one column, folded as it arrives (see the class comment). */
  private static final class ColumnOperations {
    /** Key → its last put value, or {@link #DELETED}; in key order. */
    final TreeMap<byte[], byte[]> keys = new TreeMap<>(Arrays::compareUnsigned);

    final List<byte[][]> ranges = new ArrayList<>(0);
  }

  private static final class PostgresBatch implements Batch {
    final ColumnOperations[] columns = new ColumnOperations[Column.values().length];
    /** Partition → the epoch it must have; several fences of one partition must agree. */
    final Map<Integer, Long> fences = new LinkedHashMap<>();

    private ColumnOperations of(Column column) {
      ColumnOperations operations = columns[column.ordinal()];
      if (operations == null) {
        operations = columns[column.ordinal()] = new ColumnOperations();
      }
      return operations;
    }

    @Override
    public void put(Column column, byte[] key, byte[] value) {
      of(column).keys.put(key.clone(), value.clone());
    }

    @Override
    public void delete(Column column, byte[] key) {
      of(column).keys.put(key.clone(), DELETED);
    }

    @Override
    public void deleteRange(Column column, byte[] fromInclusive, byte[] toExclusive) {
      if (Arrays.compareUnsigned(fromInclusive, toExclusive) >= 0) {
        return; // an empty range (RocksDB ignores it too)
      }
      ColumnOperations operations = of(column);
      operations.keys.subMap(fromInclusive, true, toExclusive, false).clear();
      operations.ranges.add(new byte[][] {fromInclusive.clone(), toExclusive.clone()});
    }

    @Override
    public void fence(int partition, long epoch) {
      Long previous = fences.putIfAbsent(partition, epoch);
      if (previous != null && previous != epoch) {
        // Both must hold, which no epoch does: keep one that fails whatever the row says.
        fences.put(partition, -1L);
      }
    }

    @Override
    public void close() {}
  }

  // ------------------------------------------------------------------------ snapshots, cursors

  private final class PostgresSnapshot implements Snapshot {
    private Connection connection;

    PostgresSnapshot(Connection connection) {
      this.connection = connection;
    }

    Connection connection() {
      if (connection == null) {
        throw new IllegalStateException("the snapshot is closed");
      }
      return connection;
    }

    @Override
    public void close() {
      if (connection != null) {
        endReadTransaction(connection);
        connection = null;
      }
    }
  }

  /**
   * A keyset-paged cursor in a read transaction: its snapshot's, or its own (ended by {@link
   * #close}). {@link #page} holds the rows read ahead; {@link #more} says whether rows may follow
   * the page within the bounds.
   */
  private final class PostgresCursor implements Cursor {
    private final ColumnSql sql;
    private final Connection connection;
    private final boolean ownsTransaction;
    private final byte[] lower;
    private final byte[] upper;
    private Exception failure;
    private List<byte[][]> page = List.of();
    private int position;
    private boolean more;
    private int pageRows = FIRST_PAGE_ROWS;
    private boolean closed;

    PostgresCursor(ColumnSql sql, Connection connection, boolean ownsTransaction,
        Exception failure, byte[] lower, byte[] upper) {
      this.sql = sql;
      this.connection = connection;
      this.ownsTransaction = ownsTransaction;
      this.failure = failure;
      this.lower = lower == null ? null : lower.clone();
      this.upper = upper == null ? null : upper.clone();
    }

    @Override
    public void seekToFirst() {
      seek(lower == null ? new byte[0] : lower);
    }

    @Override
    public void seek(byte[] target) {
      pageRows = FIRST_PAGE_ROWS;
      byte[] from = lower != null && Arrays.compareUnsigned(target, lower) < 0 ? lower : target;
      readForward(from, true);
    }

    @Override
    public void seekForPrev(byte[] target) {
      pageRows = FIRST_PAGE_ROWS;
      if (!usable()) {
        return;
      }
      try {
        List<byte[][]> rows;
        if (upper != null && Arrays.compareUnsigned(target, upper) >= 0) {
          // At or past the exclusive upper bound: the last key below it.
          rows = query(
              "SELECT key, value FROM " + sql.table + " WHERE key < ?"
                  + (lower != null ? " AND key >= ?" : "") + " ORDER BY key DESC LIMIT 1",
              upper, lower, 0);
        } else {
          rows = query(sql.backward(lower != null), target, lower, 0);
        }
        show(rows, true);
      } catch (SQLException e) {
        fail(e);
      }
    }

    @Override
    public void next() {
      if (!isPositioned()) {
        throw new IllegalStateException("next() on a cursor that is not at a key");
      }
      position++;
      if (position == page.size() && more) {
        byte[] last = page.get(page.size() - 1)[0];
        pageRows = Math.min(pageRows * 2, settings.cursorPageRows());
        readForward(last, false);
      }
    }

    private void readForward(byte[] from, boolean inclusive) {
      if (!usable()) {
        return;
      }
      try {
        int rows = Math.min(pageRows, settings.cursorPageRows());
        List<byte[][]> read = query(sql.forward(inclusive, upper != null), from, upper, rows);
        show(read, read.size() == rows);
      } catch (SQLException e) {
        fail(e);
      }
    }

    /** Runs a page query: key parameter, optional bound parameter, LIMIT (0: none in the SQL). */
    private List<byte[][]> query(String statementSql, byte[] key, byte[] bound, int limit)
        throws SQLException {
      List<byte[][]> rows = new ArrayList<>();
      try (PreparedStatement select = connection.prepareStatement(statementSql)) {
        int parameter = 1;
        select.setBytes(parameter++, key);
        if (bound != null) {
          select.setBytes(parameter++, bound);
        }
        if (limit > 0) {
          select.setInt(parameter, limit);
        }
        try (ResultSet result = select.executeQuery()) {
          while (result.next()) {
            rows.add(new byte[][] {result.getBytes(1), result.getBytes(2)});
          }
        }
      }
      return rows;
    }

    private void show(List<byte[][]> rows, boolean mayContinue) {
      page = rows;
      position = 0;
      more = mayContinue && !rows.isEmpty();
    }

    private boolean usable() {
      if (closed) {
        throw new IllegalStateException("the cursor is closed");
      }
      page = List.of();
      position = 0;
      more = false;
      if (connection == null) {
        return false; // no transaction could be started: failure says why
      }
      failure = null;
      return true;
    }

    private void fail(SQLException e) {
      page = List.of();
      position = 0;
      more = false;
      String state = e.getSQLState();
      failure = "XX001".equals(state) || "XX002".equals(state)
          ? new CorruptDataException("PostgreSQL reports damaged data in " + sql.table + ": "
              + e.getMessage(), e)
          : e;
    }

    private boolean isPositioned() {
      return failure == null && position < page.size();
    }

    @Override
    public boolean isValid() {
      if (failure instanceof CorruptDataException damage) {
        throw damage;
      }
      if (failure != null) {
        throw new UncheckedIOException(new IOException(
            "reading " + sql.table + " failed: " + failure.getMessage(), failure));
      }
      return position < page.size();
    }

    @Override
    public byte[] key() {
      if (!isPositioned()) {
        throw new IllegalStateException("the cursor is not at a key");
      }
      return page.get(position)[0].clone();
    }

    @Override
    public byte[] value() {
      if (!isPositioned()) {
        throw new IllegalStateException("the cursor is not at a key");
      }
      return page.get(position)[1].clone();
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      if (ownsTransaction && connection != null) {
        endReadTransaction(connection);
      }
    }
  }
}
