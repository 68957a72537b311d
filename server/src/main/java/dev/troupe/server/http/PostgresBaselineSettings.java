package dev.troupe.server.http;

import com.typesafe.config.Config;

/**
 * Settings of the PostgreSQL baseline server, parsed once from {@code troupe.baseline.postgres}.
 *
 * @param poolSize pooled JDBC connections
 * @param maxRetries retries after a serialization failure or deadlock
 * @param connectionTimeoutMillis how long a request waits for a connection
 * @param queueLimit requests waiting for a connection before 429
 * @param isolation the statements' isolation level: {@code serializable} or {@code read-committed}
 */
public record PostgresBaselineSettings(int poolSize, int maxRetries, long connectionTimeoutMillis,
    int queueLimit, String isolation) {
  public PostgresBaselineSettings {
    if (!isolation.equals("serializable") && !isolation.equals("read-committed")) {
      throw new IllegalArgumentException("troupe.baseline.postgres.isolation must be serializable"
          + " or read-committed, was '" + isolation + "'");
    }
  }

  /** The JDBC name of {@link #isolation} (what HikariCP's transactionIsolation takes). */
  public String jdbcIsolation() {
    return isolation.equals("serializable")
        ? "TRANSACTION_SERIALIZABLE" : "TRANSACTION_READ_COMMITTED";
  }

  public static PostgresBaselineSettings fromConfig(Config config) {
    Config baseline = config.getConfig("troupe.baseline.postgres");
    return new PostgresBaselineSettings(
        baseline.getInt("pool-size"),
        baseline.getInt("max-retries"),
        baseline.getLong("connection-timeout-millis"),
        baseline.getInt("queue-limit"),
        baseline.getString("isolation"));
  }
}
