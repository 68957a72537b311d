package dev.troupe.server.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * What the PostgreSQL baselines share: a connection pool at SERIALIZABLE, which failures are worth
 * re-running, the pause between re-runs, and the error an environmental failure becomes.
 */
public final class PostgresSupport {
  private static final String SERIALIZATION_FAILURE = "40001";
  private static final String DEADLOCK_DETECTED = "40P01";
  private static final long MAX_BACKOFF_MICROS = 20_000;

  private PostgresSupport() {}

  /**
   * A pool of {@code poolSize} connections (all opened at once, so no run pays for connecting),
   * every one SERIALIZABLE.
   */
  public static HikariDataSource pool(String jdbcUrl, int poolSize, long connectionTimeoutMillis,
      boolean autoCommit, String poolName) {
    return pool(jdbcUrl, poolSize, connectionTimeoutMillis, autoCommit, poolName,
        "TRANSACTION_SERIALIZABLE");
  }

  /**
   * As {@link #pool(String, int, long, boolean, String)}, at {@code jdbcIsolation} (e.g. {@code
   * TRANSACTION_READ_COMMITTED}, for the YCSB baseline's control run).
   */
  public static HikariDataSource pool(String jdbcUrl, int poolSize, long connectionTimeoutMillis,
      boolean autoCommit, String poolName, String jdbcIsolation) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(poolSize);
    config.setConnectionTimeout(connectionTimeoutMillis);
    config.setAutoCommit(autoCommit);
    config.setTransactionIsolation(jdbcIsolation);
    config.setPoolName(poolName);
    return new HikariDataSource(config);
  }

  /** A serialization failure or a deadlock: the transaction changed nothing and may run again. */
  /** One attempt of a transaction or statement. */
  public interface Attempt<T> {
    T run() throws SQLException;
  }

  /** What to throw once the retries are used up, given the attempts made and the last failure. */
  public interface Exhausted {
    RuntimeException after(int attempts, SQLException last);
  }

  /**
   * Runs {@code attempt}, re-running it after a serialization failure or deadlock with {@link
   * #backOff}, at most {@code maxRetries} times (each counted in {@code retries}); any other
   * failure is {@link #unavailable} with {@code what}.
   */
  public static <T> T retrying(int maxRetries, java.util.concurrent.atomic.LongAdder retries,
      String what, Exhausted exhausted, Attempt<T> attempt) {
    for (int retry = 0; ; retry++) {
      try {
        return attempt.run();
      } catch (SQLException e) {
        if (!retryable(e)) {
          throw unavailable(what, e);
        }
        if (retry >= maxRetries) {
          throw exhausted.after(retry + 1, e);
        }
        retries.increment();
        backOff(retry);
      }
    }
  }

  public static boolean retryable(SQLException e) {
    return SERIALIZATION_FAILURE.equals(e.getSQLState())
        || DEADLOCK_DETECTED.equals(e.getSQLState());
  }

  /**
   * Randomized exponential backoff before re-run number {@code retry} (0 for the first), so that
   * conflicting re-runs do not collide again at once.
   */
  public static void backOff(int retry) {
    long ceiling = Math.min(MAX_BACKOFF_MICROS, 100L << Math.min(retry, 16));
    long micros = ThreadLocalRandom.current().nextLong(ceiling + 1);
    try {
      TimeUnit.MICROSECONDS.sleep(micros);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TroupeException(ErrorCode.UNAVAILABLE, "interrupted while retrying");
    }
  }

  /** An environmental failure: 503 {@code unavailable}, with PostgreSQL's message and state. */
  public static TroupeException unavailable(String what, SQLException e) {
    return new TroupeException(ErrorCode.UNAVAILABLE, what + ": " + e.getMessage()
        + " (SQLSTATE " + e.getSQLState() + ")");
  }
}
