package dev.troupe.server.http;

import com.typesafe.config.Config;

/**
 * Settings of the PostgreSQL baseline server, parsed once from {@code troupe.baseline.postgres}.
 *
 * @param poolSize pooled JDBC connections
 * @param maxRetries retries after a serialization failure or deadlock
 * @param connectionTimeoutMillis how long a request waits for a connection
 * @param queueLimit requests waiting for a connection before 429
 */
public record PostgresBaselineSettings(int poolSize, int maxRetries, long connectionTimeoutMillis,
    int queueLimit) {

  public static PostgresBaselineSettings fromConfig(Config config) {
    Config baseline = config.getConfig("troupe.baseline.postgres");
    return new PostgresBaselineSettings(
        baseline.getInt("pool-size"),
        baseline.getInt("max-retries"),
        baseline.getLong("connection-timeout-millis"),
        baseline.getInt("queue-limit"));
  }
}
