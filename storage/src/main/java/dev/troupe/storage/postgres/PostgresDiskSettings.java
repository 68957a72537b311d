package dev.troupe.storage.postgres;

import java.util.Objects;

/**
 * How {@link PostgresDisk} reaches its PostgreSQL database, parsed once from {@code
 * troupe.storage.postgres} (runtime's reference.conf documents each setting and its unit).
 *
 * @param jdbcUrl the database, e.g. {@code jdbc:postgresql://10.0.0.5:5432/troupe}
 * @param user the role to log in as; empty: the one in the URL (or the driver's default)
 * @param password the role's password; empty: none (or the one in the URL)
 * @param maximumPoolSize most connections the disk holds open. Each write batch, snapshot and
 *     cursor (as long as it is open) holds one, and a partition's writer can hold three at once
 *     (a truncation's two cursors and its write): at least {@code 3 × partitions} plus the
 *     concurrent reads wanted
 * @param connectionTimeoutMillis how long an operation waits for a free connection (or for a new
 *     one to the server) before it fails with a {@link dev.troupe.storage.DiskException}
 * @param cursorPageRows most rows a cursor reads per query; its first page is smaller (a cursor
 *     usually reads a few keys) and pages grow up to this
 */
public record PostgresDiskSettings(
    String jdbcUrl,
    String user,
    String password,
    int maximumPoolSize,
    long connectionTimeoutMillis,
    int cursorPageRows) {

  /** As in runtime's reference.conf. */
  public static final int DEFAULT_MAXIMUM_POOL_SIZE = 32;

  public static final long DEFAULT_CONNECTION_TIMEOUT_MILLIS = 10_000;
  public static final int DEFAULT_CURSOR_PAGE_ROWS = 256;

  public PostgresDiskSettings {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    user = user == null ? "" : user;
    password = password == null ? "" : password;
    if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(
          "troupe.storage.postgres.jdbc-url must be a jdbc:postgresql: URL, was '" + jdbcUrl + "'");
    }
    if (maximumPoolSize < 2) {
      throw new IllegalArgumentException(
          "troupe.storage.postgres.maximum-pool-size must be >= 2, was " + maximumPoolSize);
    }
    // HikariCP's own floor.
    if (connectionTimeoutMillis < 250) {
      throw new IllegalArgumentException(
          "troupe.storage.postgres.connection-timeout-millis must be >= 250, was "
              + connectionTimeoutMillis);
    }
    if (cursorPageRows < 1) {
      throw new IllegalArgumentException(
          "troupe.storage.postgres.cursor-page-rows must be >= 1, was " + cursorPageRows);
    }
  }

  /** The defaults for a database at {@code jdbcUrl}, credentials in the URL if any. */
  public static PostgresDiskSettings defaults(String jdbcUrl) {
    return new PostgresDiskSettings(jdbcUrl, "", "", DEFAULT_MAXIMUM_POOL_SIZE,
        DEFAULT_CONNECTION_TIMEOUT_MILLIS, DEFAULT_CURSOR_PAGE_ROWS);
  }

  public PostgresDiskSettings withMaximumPoolSize(int value) {
    return new PostgresDiskSettings(jdbcUrl, user, password, value, connectionTimeoutMillis,
        cursorPageRows);
  }

  public PostgresDiskSettings withConnectionTimeoutMillis(long value) {
    return new PostgresDiskSettings(jdbcUrl, user, password, maximumPoolSize, value,
        cursorPageRows);
  }

  public PostgresDiskSettings withCursorPageRows(int value) {
    return new PostgresDiskSettings(jdbcUrl, user, password, maximumPoolSize,
        connectionTimeoutMillis, value);
  }

  /** Never prints the password. */
  @Override
  public String toString() {
    return "PostgresDiskSettings[jdbcUrl=" + jdbcUrl + ", user=" + user + ", password="
        + (password.isEmpty() ? "" : "***") + ", maximumPoolSize=" + maximumPoolSize
        + ", connectionTimeoutMillis=" + connectionTimeoutMillis + ", cursorPageRows="
        + cursorPageRows + "]";
  }
}
