package dev.troupe.server.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Troupe's entity model stored in PostgreSQL: the benchmark baseline (the D-Thespis paper's
 * DB_1S_1DC, a REST service executing directly against the relational database it fronts).
 *
 * <p>One row per entity, {@code (type, id) -> (state jsonb, version bigint)}: a read is one index
 * lookup and a write one upsert, the cheapest layout PostgreSQL offers for this model. Versions
 * come from one sequence, so they increase across an entity's deletion and re-creation as Troupe's
 * do. The table's fill factor leaves room for heap-only-tuple updates.
 *
 * <p><b>Isolation and durability</b>: every operation is a single SQL statement run as its own
 * SERIALIZABLE transaction (the connection's isolation level, with autocommit; READ COMMITTED
 * when {@link Settings#jdbcIsolation} says so, the control run of {@code troupe bench ycsb}, which
 * for one statement guarantees the same), committed with PostgreSQL's defaults, {@code fsync} and
 * {@code synchronous_commit} on. A serialization failure
 * or deadlock is retried with a short randomized backoff, up to {@code maxRetries} times; then
 * the caller gets {@code unavailable} (HTTP 503) and nothing was changed.
 *
 * <p><b>Concurrency</b>: thread-safe; each call borrows a pooled connection (HikariCP) and blocks
 * the calling thread until PostgreSQL answers, so callers run it on a pool of their own.
 */
public final class PostgresEntities implements AutoCloseable {

  private static final String UPSERT_RETURNING = """
      INSERT INTO entities AS e (type, id, state, version)
      VALUES (?, ?, %s, nextval('entity_versions'))
      ON CONFLICT (type, id) DO UPDATE
        SET state = e.state || EXCLUDED.state, version = nextval('entity_versions')
      RETURNING %s""";

  /**
   * @param jdbcUrl the database
   * @param poolSize connections, hence statements PostgreSQL runs at once
   * @param maxRetries retries of a statement after a serialization failure or deadlock
   * @param connectionTimeoutMillis how long a caller waits for a pooled connection
   */
  public record Settings(String jdbcUrl, int poolSize, int maxRetries,
      long connectionTimeoutMillis, String jdbcIsolation) {
    /** At SERIALIZABLE. */
    public Settings(String jdbcUrl, int poolSize, int maxRetries, long connectionTimeoutMillis) {
      this(jdbcUrl, poolSize, maxRetries, connectionTimeoutMillis, "TRANSACTION_SERIALIZABLE");
    }

    public Settings {
      if (poolSize < 1 || maxRetries < 0 || connectionTimeoutMillis < 250) {
        throw new IllegalArgumentException("pool size >= 1, retries >= 0 and a connection timeout"
            + " of at least 250 ms are required");
      }
    }
  }

  /** An entity's state (a JSON object, as text) and version. */
  public record Stored(String stateJson, long version) {}

  private final HikariDataSource pool;
  private final int maxRetries;
  private final LongAdder retries = new LongAdder();

  private PostgresEntities(HikariDataSource pool, int maxRetries) {
    this.pool = pool;
    this.maxRetries = maxRetries;
  }

  /** Connects and creates the table and sequence if they do not exist. */
  public static PostgresEntities open(Settings settings) {
    HikariDataSource pool = PostgresSupport.pool(settings.jdbcUrl(), settings.poolSize(),
        settings.connectionTimeoutMillis(), true, "troupe-postgres-baseline",
        settings.jdbcIsolation());
    try (Connection connection = pool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("""
          CREATE TABLE IF NOT EXISTS entities (
            type text NOT NULL,
            id text COLLATE "C" NOT NULL,
            state jsonb NOT NULL,
            version bigint NOT NULL,
            PRIMARY KEY (type, id)
          ) WITH (fillfactor = 80)""");
      statement.execute("CREATE SEQUENCE IF NOT EXISTS entity_versions");
    } catch (SQLException e) {
      pool.close();
      throw PostgresSupport.unavailable("cannot create the schema", e);
    }
    return new PostgresEntities(pool, settings.maxRetries());
  }

  /** The entity, or empty if it does not exist. */
  public Optional<Stored> get(String type, String id) {
    return execute("SELECT state::text, version FROM entities WHERE type = ? AND id = ?",
        statement -> {
          statement.setString(1, type);
          statement.setString(2, id);
          try (ResultSet row = statement.executeQuery()) {
            return row.next()
                ? Optional.of(new Stored(row.getString(1), row.getLong(2)))
                : Optional.empty();
          }
        });
  }

  /** One key's value as JSON text, or empty if the entity or the key does not exist. */
  public Optional<String> getKey(String type, String id, String key) {
    return execute("SELECT (state -> ?)::text FROM entities WHERE type = ? AND id = ?",
        statement -> {
          statement.setString(1, key);
          statement.setString(2, type);
          statement.setString(3, id);
          try (ResultSet row = statement.executeQuery()) {
            return row.next() ? Optional.ofNullable(row.getString(1)) : Optional.empty();
          }
        });
  }

  /**
   * Assigns every key of {@code patchJson} (a JSON object) at once, creating the entity if needed;
   * returns the new state and version.
   */
  public Stored patch(String type, String id, String patchJson) {
    return execute(UPSERT_RETURNING.formatted("?::jsonb", "state::text, version"), statement -> {
      statement.setString(1, type);
      statement.setString(2, id);
      statement.setString(3, patchJson);
      try (ResultSet row = statement.executeQuery()) {
        row.next();
        return new Stored(row.getString(1), row.getLong(2));
      }
    });
  }

  /**
   * As {@link #patch}, returning only the new version: for a writer that asks for none of the
   * state ({@code ?state=none}), so the baseline neither converts nor sends the state back.
   */
  public long patchReturningVersion(String type, String id, String patchJson) {
    return execute(UPSERT_RETURNING.formatted("?::jsonb", "version"), statement -> {
      statement.setString(1, type);
      statement.setString(2, id);
      statement.setString(3, patchJson);
      try (ResultSet row = statement.executeQuery()) {
        row.next();
        return row.getLong(1);
      }
    });
  }

  /** Assigns one key, creating the entity if needed; returns the new version. */
  public long putKey(String type, String id, String key, String valueJson) {
    return execute(UPSERT_RETURNING.formatted("jsonb_build_object(?::text, ?::jsonb)", "version"),
        statement -> {
          statement.setString(1, type);
          statement.setString(2, id);
          statement.setString(3, key);
          statement.setString(4, valueJson);
          try (ResultSet row = statement.executeQuery()) {
            row.next();
            return row.getLong(1);
          }
        });
  }

  /**
   * Removes one key, leaving the entity in place (with an empty state if it was the last key);
   * an entity that does not exist is created empty, as Troupe does. Returns the new version.
   */
  public long deleteKey(String type, String id, String key) {
    return execute("""
        INSERT INTO entities AS e (type, id, state, version)
        VALUES (?, ?, '{}'::jsonb, nextval('entity_versions'))
        ON CONFLICT (type, id) DO UPDATE
          SET state = e.state - ?::text, version = nextval('entity_versions')
        RETURNING version""", statement -> {
          statement.setString(1, type);
          statement.setString(2, id);
          statement.setString(3, key);
          try (ResultSet row = statement.executeQuery()) {
            row.next();
            return row.getLong(1);
          }
        });
  }

  /** One listed entity: its id, version and (when asked for) its state's JSON text. */
  public record Listed(String id, long version, String stateJson) {}

  /**
   * A page of the type's entities in id order (the id column's collation is "C": byte order of
   * UTF-8, which is code point order, as Troupe's listing index), from {@code startId} (included
   * with {@code includeStart}; null: from the first), at most {@code limit}: one range read of
   * the primary key's index, as Troupe's listing is one of its listing index.
   */
  public List<Listed> list(String type, String startId, boolean includeStart, int limit,
      boolean withStates) {
    String sql = "SELECT id, version" + (withStates ? ", state::text" : "")
        + " FROM entities WHERE type = ?"
        + (startId == null ? "" : includeStart ? " AND id >= ?" : " AND id > ?")
        + " ORDER BY id LIMIT ?";
    return execute(sql, statement -> {
      int parameter = 1;
      statement.setString(parameter++, type);
      if (startId != null) {
        statement.setString(parameter++, startId);
      }
      statement.setInt(parameter, limit);
      List<Listed> page = new java.util.ArrayList<>(Math.min(limit, 1024));
      try (ResultSet row = statement.executeQuery()) {
        while (row.next()) {
          page.add(new Listed(row.getString(1), row.getLong(2),
              withStates ? row.getString(3) : null));
        }
      }
      return page;
    });
  }

  /** Deletes the entity; returns the deletion's version, or empty if it did not exist. */
  public OptionalLong delete(String type, String id) {
    return execute("""
        DELETE FROM entities WHERE type = ? AND id = ?
        RETURNING nextval('entity_versions')""", statement -> {
          statement.setString(1, type);
          statement.setString(2, id);
          try (ResultSet row = statement.executeQuery()) {
            return row.next() ? OptionalLong.of(row.getLong(1)) : OptionalLong.empty();
          }
        });
  }

  /** Statements retried after a serialization failure or deadlock since opening. */
  public long retries() {
    return retries.sum();
  }

  @Override
  public void close() {
    pool.close();
  }

  private interface StatementBody<T> {
    T run(PreparedStatement statement) throws SQLException;
  }

  private <T> T execute(String sql, StatementBody<T> body) {
    return PostgresSupport.retrying(maxRetries, retries, "PostgreSQL failed the statement",
        (attempts, last) -> new TroupeException(ErrorCode.UNAVAILABLE, "PostgreSQL could not"
            + " serialize the transaction after " + maxRetries + " retries; nothing was changed;"
            + " retry"),
        () -> {
          try (Connection connection = pool.getConnection();
              PreparedStatement statement = connection.prepareStatement(sql)) {
            return body.run(statement);
          }
        });
  }
}
