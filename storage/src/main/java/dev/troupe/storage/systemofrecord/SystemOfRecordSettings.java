package dev.troupe.storage.systemofrecord;

/**
 * The settings of the system-of-record exporter ({@code troupe.system-of-record.*} in the server's
 * reference.conf, parsed once by the server).
 *
 * @param jdbcUrl the PostgreSQL database the tables are kept in; empty: no exporter
 * @param batchMaxRecords the most journal records one PostgreSQL transaction applies (unless one
 *     transaction alone has more parts: a transaction is never split), and the first read-ahead
 *     per partition
 * @param pollIntervalMillis how long the exporter waits when it has caught up before it looks at
 *     the journal again
 * @param retryMinBackoffMillis the first wait after a failed batch or a lost connection
 * @param retryMaxBackoffMillis the longest wait between attempts (the wait doubles up to it)
 * @param connectTimeoutSeconds PostgreSQL's connect timeout (the driver's {@code connectTimeout})
 * @param socketTimeoutSeconds how long a statement's answer may take before the connection is
 *     taken for lost (the driver's {@code socketTimeout})
 * @param initialExportPageEntities entities per page and per PostgreSQL transaction of the initial
 *     export (the first start against an empty database)
 * @param readAheadMaxRecords the largest read-ahead per partition: while a transaction's last
 *     part lies beyond the reads, they double up to this; beyond it a batch may end inside a
 *     transaction (logged)
 */
public record SystemOfRecordSettings(String jdbcUrl, int batchMaxRecords, long pollIntervalMillis,
    long retryMinBackoffMillis, long retryMaxBackoffMillis, int connectTimeoutSeconds,
    int socketTimeoutSeconds, int initialExportPageEntities, int readAheadMaxRecords) {
  public SystemOfRecordSettings {
    jdbcUrl = jdbcUrl == null ? "" : jdbcUrl.trim();
    if (batchMaxRecords < 1 || pollIntervalMillis < 1 || retryMinBackoffMillis < 1
        || retryMaxBackoffMillis < retryMinBackoffMillis || connectTimeoutSeconds < 1
        || socketTimeoutSeconds < 1 || initialExportPageEntities < 1
        || readAheadMaxRecords < batchMaxRecords) {
      throw new IllegalArgumentException("troupe.system-of-record: batch-max-records,"
          + " poll-interval-millis, retry-min-backoff-millis, connect-timeout-seconds,"
          + " socket-timeout-seconds and initial-export-page-entities must be at least 1, and"
          + " retry-max-backoff-millis at least retry-min-backoff-millis and"
          + " read-ahead-max-records at least batch-max-records");
    }
  }

  /** Whether an exporter runs (a JDBC URL is set). */
  public boolean enabled() {
    return !jdbcUrl.isEmpty();
  }

  /** The same settings with another database. */
  public SystemOfRecordSettings withJdbcUrl(String url) {
    return new SystemOfRecordSettings(url, batchMaxRecords, pollIntervalMillis,
        retryMinBackoffMillis, retryMaxBackoffMillis, connectTimeoutSeconds, socketTimeoutSeconds,
        initialExportPageEntities, readAheadMaxRecords);
  }
}
