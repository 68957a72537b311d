package dev.troupe.server.cli;

import dev.troupe.storage.systemofrecord.PostgresExporter;

/** The system-of-record exporter's lines of {@code GET /metrics} (Prometheus text format). */
final class SystemOfRecordMetrics {
  private SystemOfRecordMetrics() {}

  static void render(StringBuilder out, PostgresExporter.Statistics statistics) {
    metric(out, "troupe_system_of_record_watermark", "gauge",
        "Commit timestamp up to which the PostgreSQL tables hold every transaction.",
        statistics.watermark());
    metric(out, "troupe_system_of_record_lag_timestamp", "gauge",
        "Durable commit timestamp minus the oldest record not applied (hybrid-clock units); 0 when caught up.",
        statistics.lagTimestamp());
    metric(out, "troupe_system_of_record_lag_seconds", "gauge",
        "Age of the oldest committed record not yet in the tables (or, after a batch, how long its oldest record waited), in seconds; 0 when caught up.",
        statistics.lagMillis() / 1000.0);
    metric(out, "troupe_system_of_record_rows_applied_total", "counter",
        "Rows written or deleted in the PostgreSQL tables.", statistics.rowsApplied());
    metric(out, "troupe_system_of_record_records_applied_total", "counter",
        "Journal records applied to the PostgreSQL tables.", statistics.recordsApplied());
    metric(out, "troupe_system_of_record_batches_total", "counter",
        "PostgreSQL transactions that applied a batch.", statistics.batches());
    metric(out, "troupe_system_of_record_errors_total", "counter",
        "Failed batches and lost connections (each retried), and a stop.", statistics.errors());
    metric(out, "troupe_system_of_record_connected", "gauge",
        "1 while the exporter holds a PostgreSQL connection.", statistics.connected() ? 1 : 0);
    metric(out, "troupe_system_of_record_stopped", "gauge",
        "1 once the exporter stopped on something it cannot map (see the log).",
        statistics.stoppedBecause() == null ? 0 : 1);
  }

  private static void metric(StringBuilder out, String name, String type, String help,
      double value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    out.append(name).append(' ');
    if (value == Math.rint(value) && Math.abs(value) < 1e15) {
      out.append((long) value);
    } else {
      out.append(value);
    }
    out.append('\n');
  }
}
