package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * A benchmark report as files people look at: {@code report.json} (the {@link BenchReport} JSON),
 * {@code throughput.png} (throughput per workload and target), {@code latency-W.png} (p50, p95 and
 * p99 per operation and target, logarithmic) and {@code index.html}, a self-contained page (charts
 * embedded) with the parameters, ratios and goals, and every figure. Drawn with XChart, headless,
 * from the report's JSON alone, so a saved report can be drawn again.
 *
 * <p>Results named {@code workload/target} are charted; a {@link Layout} says which figure is the
 * throughput and which operations have latency percentiles ({@code OPERATION_p50_milliseconds}).
 */
final class HtmlReport {
  private HtmlReport() {}

  /**
   * What a benchmark's report charts.
   *
   * @param heading the page's heading
   * @param throughputFigure the figure each target's throughput is read from
   * @param throughputAxis the throughput chart's y-axis title
   * @param operations the operations whose latency percentiles are charted, in chart order
   */
  record Layout(String heading, String throughputFigure, String throughputAxis,
      List<String> operations) {
    static final Layout YCSB = new Layout("YCSB over the entity REST API",
        "throughput_per_second", "operations per second", YcsbRunner.OPERATIONS);
    static final Layout BANK = new Layout("Bank: PSAC vs plain two-phase commit",
        "committed_per_second", "committed transactions per second", List.of("transaction"));
    static final Layout SMALLBANK = new Layout("SmallBank: key-level vs actor-level admission,"
        + " planned vs dynamic, and PostgreSQL", "completed_per_second",
        "completed transactions per second", List.of("Amalgamate", "Balance", "DepositChecking",
            "MultiTransfer", "SendPayment", "TransactSavings", "WriteCheck"));
    static final Layout MARKETPLACE = new Layout("Online Marketplace: consistency declared as"
        + " dependencies vs hand-coded", "completed_per_second",
        "completed transactions per second", List.of("AddItemToCart", "DeleteItemInCart",
            "UpdatePrice", "Checkout", "SellerDashboard", "DeleteProduct"));
  }

  private static final int WIDTH = 900;
  private static final int HEIGHT = 480;
  private static final List<String> PERCENTILES = List.of("p50", "p95", "p99");

  static void write(Path directory, ObjectNode report, Layout layout) {
    System.setProperty("java.awt.headless", "true");
    try {
      Files.createDirectories(directory);
      Json.MAPPER.writerWithDefaultPrettyPrinter()
          .writeValue(directory.resolve("report.json").toFile(), report);
      Map<String, Map<String, JsonNode>> byWorkload = resultsByWorkload(report.get("results"));
      Map<String, byte[]> charts = new LinkedHashMap<>();
      charts.put("throughput.png", png(throughputChart(byWorkload, layout)));
      for (Map.Entry<String, Map<String, JsonNode>> workload : byWorkload.entrySet()) {
        CategoryChart latency = latencyChart(workload.getKey(), workload.getValue(), layout);
        if (latency != null) {
          charts.put("latency-" + workload.getKey() + ".png", png(latency));
        }
      }
      for (Map.Entry<String, byte[]> chart : charts.entrySet()) {
        Files.write(directory.resolve(chart.getKey()), chart.getValue());
      }
      Files.writeString(directory.resolve("index.html"), html(report, charts, layout.heading()));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the report to " + directory + ": " + e, e);
    }
  }

  /** Results named "workload/target" grouped by workload (load results are left out). */
  static Map<String, Map<String, JsonNode>> resultsByWorkload(JsonNode results) {
    Map<String, Map<String, JsonNode>> byWorkload = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> systems = results.fields();
    while (systems.hasNext()) {
      Map.Entry<String, JsonNode> system = systems.next();
      int slash = system.getKey().indexOf('/');
      if (slash < 0 || system.getKey().startsWith("load/")) {
        continue;
      }
      byWorkload.computeIfAbsent(system.getKey().substring(0, slash), ignored ->
          new LinkedHashMap<>()).put(system.getKey().substring(slash + 1), system.getValue());
    }
    return byWorkload;
  }

  private static CategoryChart throughputChart(Map<String, Map<String, JsonNode>> byWorkload,
      Layout layout) {
    CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT)
        .title("Throughput (median of rounds)").xAxisTitle("workload")
        .yAxisTitle(layout.throughputAxis()).build();
    style(chart);
    List<String> workloads = new ArrayList<>(byWorkload.keySet());
    for (String target : targets(byWorkload)) {
      List<Double> values = new ArrayList<>();
      for (String workload : workloads) {
        JsonNode figures = byWorkload.get(workload).get(target);
        values.add(figures == null ? 0.0 : figures.path(layout.throughputFigure()).asDouble());
      }
      chart.addSeries(target, workloads, values);
    }
    return chart;
  }

  /** Latency percentiles per operation and target; null if no operation was timed. */
  private static CategoryChart latencyChart(String workload, Map<String, JsonNode> byTarget,
      Layout layout) {
    List<String> categories = new ArrayList<>();
    for (String operation : layout.operations()) {
      boolean present = byTarget.values().stream()
          .anyMatch(figures -> figures.has(operation + "_p50_milliseconds"));
      if (present) {
        PERCENTILES.forEach(percentile -> categories.add(operation + " " + percentile));
      }
    }
    if (categories.isEmpty()) {
      return null;
    }
    CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT)
        .title("Workload " + workload + ": latency percentiles").xAxisTitle("operation")
        .yAxisTitle("milliseconds (log scale)").build();
    style(chart);
    chart.getStyler().setYAxisLogarithmic(true);
    double smallest = Double.MAX_VALUE;
    for (Map.Entry<String, JsonNode> target : byTarget.entrySet()) {
      List<Double> values = new ArrayList<>();
      for (String category : categories) {
        String[] parts = category.split(" ");
        double milliseconds = target.getValue()
            .path(parts[0] + "_" + parts[1] + "_milliseconds").asDouble(0);
        values.add(Math.max(milliseconds, 0.001)); // a log axis cannot show zero
        smallest = Math.min(smallest, values.getLast());
      }
      chart.addSeries(target.getKey(), categories, values);
    }
    // Bars start at the axis minimum, which must be positive on a log axis.
    chart.getStyler().setYAxisMin(smallest / 2);
    return chart;
  }

  private static void style(CategoryChart chart) {
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
    chart.getStyler().setPlotGridVerticalLinesVisible(false);
    chart.getStyler().setLabelsVisible(false);
  }

  private static Set<String> targets(Map<String, Map<String, JsonNode>> byWorkload) {
    Set<String> targets = new LinkedHashSet<>();
    byWorkload.values().forEach(byTarget -> targets.addAll(byTarget.keySet()));
    return targets;
  }

  private static byte[] png(CategoryChart chart) throws IOException {
    return BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
  }

  /**
   * Writes {@code report.json}, {@code cdf.png} (the cumulative distribution of each series of
   * values, e.g. one value per measured update) and {@code index.html} to {@code directory}.
   *
   * @param series per name, its values in ascending order
   */
  static void writeCdf(Path directory, ObjectNode report, String heading, String valueAxis,
      Map<String, double[]> series) {
    System.setProperty("java.awt.headless", "true");
    try {
      Files.createDirectories(directory);
      Json.MAPPER.writerWithDefaultPrettyPrinter()
          .writeValue(directory.resolve("report.json").toFile(), report);
      XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT)
          .title("Cumulative distribution").xAxisTitle(valueAxis)
          .yAxisTitle("share of values at most x").build();
      chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideSE);
      chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
      chart.getStyler().setMarkerSize(0);
      chart.getStyler().setYAxisMin(0.0);
      chart.getStyler().setYAxisMax(1.0);
      chart.getStyler().setYAxisDecimalPattern("0.0");
      chart.getStyler().setYAxisTickMarkSpacingHint(60);
      for (Map.Entry<String, double[]> each : series.entrySet()) {
        double[] values = each.getValue();
        if (values.length == 0) {
          continue;
        }
        double[] shares = new double[values.length];
        for (int i = 0; i < values.length; i++) {
          shares[i] = (i + 1) / (double) values.length;
        }
        chart.addSeries(each.getKey(), values, shares);
      }
      Map<String, byte[]> charts = new LinkedHashMap<>();
      if (!chart.getSeriesMap().isEmpty()) {
        charts.put("cdf.png", BitmapEncoder.getBitmapBytes(chart,
            BitmapEncoder.BitmapFormat.PNG));
      }
      for (Map.Entry<String, byte[]> each : charts.entrySet()) {
        Files.write(directory.resolve(each.getKey()), each.getValue());
      }
      Files.writeString(directory.resolve("index.html"), html(report, charts, heading));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the report to " + directory + ": " + e, e);
    }
  }

  private static String html(ObjectNode report, Map<String, byte[]> charts, String heading) {
    StringBuilder page = new StringBuilder();
    page.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<title>Troupe ").append(escape(report.path("benchmark").asText()))
        .append(" report</title><style>")
        .append("body{font-family:sans-serif;margin:2em;max-width:1000px}")
        .append("table{border-collapse:collapse;margin:1em 0}")
        .append("td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}")
        .append("td:first-child,th:first-child{text-align:left}")
        .append(".PASS{color:#070;font-weight:bold}.MISS{color:#b00;font-weight:bold}")
        .append("</style></head><body>\n<h1>").append(escape(heading))
        .append("</h1>\n");
    page.append("<h2>Parameters</h2><table>");
    report.get("parameters").fields().forEachRemaining(parameter -> page.append("<tr><td>")
        .append(escape(parameter.getKey())).append("</td><td>")
        .append(escape(parameter.getValue().isTextual() ? parameter.getValue().asText()
            : parameter.getValue().toString())).append("</td></tr>"));
    page.append("</table>\n");
    JsonNode goals = report.get("goals");
    page.append("<h2>Ratios and goals</h2><table><tr><th>ratio</th><th>value</th><th>goal</th>")
        .append("<th>verdict</th></tr>");
    report.get("ratios").fields().forEachRemaining(ratio -> {
      String goal = "-";
      String verdict = "-";
      for (JsonNode candidate : goals) {
        if (candidate.path("name").asText().equals(ratio.getKey())) {
          goal = candidate.path("goal").asText();
          verdict = candidate.path("verdict").asText();
        }
      }
      page.append("<tr><td>").append(escape(ratio.getKey())).append("</td><td>")
          .append(BenchReport.format(ratio.getValue().asDouble())).append("</td><td>")
          .append(escape(goal)).append("</td><td class=\"").append(verdict).append("\">")
          .append(verdict).append("</td></tr>");
    });
    for (JsonNode goal : goals) {
      // Absolute goals (not ratios), e.g. "p95 at most 50 ms".
      if (!report.get("ratios").has(goal.path("name").asText())) {
        String verdict = goal.path("verdict").asText();
        page.append("<tr><td>").append(escape(goal.path("name").asText())).append("</td><td>")
            .append(BenchReport.format(goal.path("value").asDouble())).append("</td><td>")
            .append(escape(goal.path("goal").asText())).append("</td><td class=\"")
            .append(verdict).append("\">").append(verdict).append("</td></tr>");
      }
    }
    page.append("</table>\n");
    for (JsonNode failure : report.get("failures")) {
      page.append("<p class=\"MISS\">FAIL: ").append(escape(failure.asText())).append("</p>\n");
    }
    page.append("<h2>Charts</h2>\n");
    charts.forEach((name, bytes) -> page.append("<p><img alt=\"").append(name)
        .append("\" src=\"data:image/png;base64,")
        .append(Base64.getEncoder().encodeToString(bytes)).append("\"></p>\n"));
    page.append("<h2>Figures</h2>\n");
    report.get("results").fields().forEachRemaining(system -> {
      page.append("<h3>").append(escape(system.getKey())).append("</h3><table>");
      system.getValue().fields().forEachRemaining(figure -> page.append("<tr><td>")
          .append(escape(figure.getKey())).append("</td><td>")
          .append(BenchReport.format(figure.getValue().asDouble())).append("</td></tr>"));
      page.append("</table>\n");
    });
    page.append("</body></html>\n");
    return page.toString();
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
