package dev.troupe.bench;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads one sample from a Prometheus text exposition ({@code GET /metrics}). */
final class PrometheusText {
  private PrometheusText() {}

  /**
   * The value of the sample named exactly {@code nameWithLabels} (e.g. {@code
   * troupe_cluster_transport_sent_total{to="partition"}}), or {@code absent} if there is none.
   */
  static double value(String exposition, String nameWithLabels, double absent) {
    Matcher matcher = Pattern.compile("(?m)^" + Pattern.quote(nameWithLabels) + " (\\S+)$")
        .matcher(exposition);
    return matcher.find() ? Double.parseDouble(matcher.group(1)) : absent;
  }
}
