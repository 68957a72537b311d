package dev.troupe.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What one benchmark run found, printed as tables and written as JSON. Every benchmark fills one
 * and nothing else formats output, so all four print and serialize the same way.
 *
 * <ul>
 *   <li><b>results</b>: per system measured (the engine, its baseline...), named figures whose
 *       names carry their unit, e.g. {@code throughput_per_second}, {@code p99_milliseconds}.
 *   <li><b>ratios</b>: the comparisons against the baseline measured in the same run, each
 *       optionally with its goal.
 *   <li><b>goals</b>: every goal with its verdict, PASS or MISS: the ratios' goals and absolute
 *       goals such as "recovery at most 5 s".
 *   <li><b>failures</b>: correctness failures (an acknowledged write lost, a wrong read); any
 *       failure makes the run fail, whatever the figures.
 *   <li><b>ratio spreads</b>: for a ratio of two sides measured in alternating rounds, how far the
 *       rounds' own ratios lay apart (min, max, median, relative standard deviation).
 *   <li><b>rounds</b>: one row per measured round of an alternating comparison (which side, its
 *       place in the round's order, the idle wait before it, its throughput and CPU), so that
 *       every median can be traced to its rounds.
 * </ul>
 *
 * <p>JSON form: {@code {"benchmark", "parameters", "results": {system: {figure: number}},
 * "ratios": {name: number}, "ratio_spreads": {name: {"min", "max", "median", "rsd_percent",
 * "rounds"}}, "rounds": [{column: value}], "goals": [{"name", "value", "goal", "verdict"}],
 * "failures": [text]}}.
 */
public final class BenchReport {
  private final String benchmark;
  private final String description;
  private final Map<String, Object> parameters = new LinkedHashMap<>();
  private final Map<String, Map<String, Double>> results = new LinkedHashMap<>();
  private final List<Figure> ratios = new ArrayList<>();
  private final List<Figure> absoluteGoals = new ArrayList<>();
  private final List<String> failures = new ArrayList<>();
  private final Map<String, Spread> ratioSpreads = new LinkedHashMap<>();
  private final List<Map<String, Object>> rounds = new ArrayList<>();

  /** A named value with an optional goal. */
  private record Figure(String name, double value, Goal goal) {}

  public BenchReport(String benchmark, String description) {
    this.benchmark = benchmark;
    this.description = description;
  }

  /** Records a setting the run used, so that the figures can be interpreted later. */
  public BenchReport parameter(String name, Object value) {
    parameters.put(name, value);
    return this;
  }

  public BenchReport result(String system, String figure, double value) {
    results.computeIfAbsent(system, ignored -> new LinkedHashMap<>()).put(figure, value);
    return this;
  }

  public double result(String system, String figure) {
    Double value = results.getOrDefault(system, Map.of()).get(figure);
    if (value == null) {
      throw new IllegalArgumentException("no result " + system + "." + figure);
    }
    return value;
  }

  /** Records {@code numerator / denominator} under {@code name}; {@code goal} may be null. */
  public double ratio(String name, double numerator, double denominator, Goal goal) {
    double value = numerator / denominator;
    ratios.add(new Figure(name, value, goal));
    return value;
  }

  /**
   * As {@link #ratio(String, double, double, Goal)}, with how far the rounds' own ratios lay
   * apart ({@code spread} may be null).
   */
  public double ratio(String name, double numerator, double denominator, Goal goal,
      Spread spread) {
    if (spread != null) {
      ratioSpreads.put(name, spread);
    }
    return ratio(name, numerator, denominator, goal);
  }

  /** The spread recorded with ratio {@code name}, or null. */
  Spread ratioSpread(String name) {
    return ratioSpreads.get(name);
  }

  /**
   * Adds one row to the rounds' log: column name to a number or text (every row of one report
   * should have the same columns).
   */
  public void round(Map<String, Object> row) {
    rounds.add(new LinkedHashMap<>(row));
  }

  /** Records a figure that has a goal of its own rather than one relative to a baseline. */
  public void goal(String name, double value, Goal goal) {
    absoluteGoals.add(new Figure(name, value, goal));
  }

  public void failure(String message) {
    failures.add(message);
  }

  public boolean failed() {
    return !failures.isEmpty();
  }

  public void print(PrintStream out) {
    out.println();
    out.println("== " + benchmark + ": " + description + " ==");
    if (!parameters.isEmpty()) {
      StringBuilder line = new StringBuilder("parameters:");
      parameters.forEach((name, value) -> line.append(' ').append(name).append('=').append(value));
      out.println(line);
    }
    out.println();
    if (!rounds.isEmpty()) {
      printRounds(out);
      out.println();
    }
    printResults(out);
    if (!ratios.isEmpty()) {
      out.println();
      printRatios(out);
    }
    if (!absoluteGoals.isEmpty()) {
      out.println();
      printFigures(out, "goal", absoluteGoals);
    }
    for (String failure : failures) {
      out.println("FAIL: " + failure);
    }
    out.flush();
  }

  /** One table per group of systems that have the same figures, so that no column is empty. */
  private void printResults(PrintStream out) {
    Map<Set<String>, List<String>> systemsByFigures = new LinkedHashMap<>();
    results.forEach((system, figures) -> systemsByFigures
        .computeIfAbsent(figures.keySet(), ignored -> new ArrayList<>()).add(system));
    boolean first = true;
    for (Map.Entry<Set<String>, List<String>> group : systemsByFigures.entrySet()) {
      if (!first) {
        out.println();
      }
      first = false;
      List<String> header = new ArrayList<>();
      header.add("system");
      header.addAll(group.getKey());
      List<List<String>> rows = new ArrayList<>();
      for (String system : group.getValue()) {
        List<String> row = new ArrayList<>();
        row.add(system);
        for (String figure : group.getKey()) {
          row.add(format(results.get(system).get(figure)));
        }
        rows.add(row);
      }
      printTable(out, header, rows);
    }
  }

  /** The rounds' log, one line per measured round, in the order they ran. */
  private void printRounds(PrintStream out) {
    List<String> header = new ArrayList<>(rounds.get(0).keySet());
    List<List<String>> rows = new ArrayList<>();
    for (Map<String, Object> round : rounds) {
      List<String> row = new ArrayList<>();
      for (String column : header) {
        Object value = round.get(column);
        row.add(value instanceof Number number ? format(number.doubleValue())
            : value == null ? "-" : value.toString());
      }
      rows.add(row);
    }
    printTable(out, header, rows);
  }

  /** The ratios, with the spread of their rounds where known. */
  private void printRatios(PrintStream out) {
    if (ratioSpreads.isEmpty()) {
      printFigures(out, "ratio", ratios);
      return;
    }
    List<List<String>> rows = new ArrayList<>();
    for (Figure figure : ratios) {
      Spread spread = ratioSpreads.get(figure.name());
      rows.add(List.of(
          figure.name(),
          format(figure.value()),
          spread == null ? "-" : format(spread.min()) + "-" + format(spread.max()),
          spread == null ? "-" : format(spread.relativeStandardDeviationPercent()),
          figure.goal() == null ? "-" : figure.goal().toString(),
          figure.goal() == null ? "-" : figure.goal().verdict(figure.value())));
    }
    printTable(out, List.of("ratio", "value", "rounds min-max", "rsd %", "goal", "verdict"),
        rows);
  }

  private static void printFigures(PrintStream out, String title, List<Figure> figures) {
    List<List<String>> rows = new ArrayList<>();
    for (Figure figure : figures) {
      rows.add(List.of(
          figure.name(),
          format(figure.value()),
          figure.goal() == null ? "-" : figure.goal().toString(),
          figure.goal() == null ? "-" : figure.goal().verdict(figure.value())));
    }
    printTable(out, List.of(title, "value", "goal", "verdict"), rows);
  }

  /** First column left-aligned, the others right-aligned, two spaces between columns. */
  private static void printTable(PrintStream out, List<String> header, List<List<String>> rows) {
    int[] widths = new int[header.size()];
    for (int column = 0; column < widths.length; column++) {
      widths[column] = header.get(column).length();
      for (List<String> row : rows) {
        widths[column] = Math.max(widths[column], row.get(column).length());
      }
    }
    List<List<String>> lines = new ArrayList<>();
    lines.add(header);
    lines.addAll(rows);
    for (List<String> line : lines) {
      StringBuilder text = new StringBuilder();
      for (int column = 0; column < widths.length; column++) {
        String cell = line.get(column);
        String padding = " ".repeat(widths[column] - cell.length());
        if (column == 0) {
          text.append(cell).append(padding);
        } else {
          text.append("  ").append(padding).append(cell);
        }
      }
      out.println(text);
    }
  }

  static String format(double value) {
    if (Double.isNaN(value)) {
      return "-";
    }
    double magnitude = Math.abs(value);
    if (value == Math.rint(value) && magnitude < 1e15) {
      return String.format(Locale.ROOT, "%,d", (long) value);
    }
    if (magnitude >= 1000) {
      return String.format(Locale.ROOT, "%,.0f", value);
    }
    if (magnitude >= 100) {
      return String.format(Locale.ROOT, "%.1f", value);
    }
    if (magnitude >= 1 || value == 0) {
      return String.format(Locale.ROOT, "%.2f", value);
    }
    return String.format(Locale.ROOT, "%.3g", value);
  }

  public ObjectNode toJson() {
    ObjectNode root = Json.NODES.objectNode();
    root.put("benchmark", benchmark);
    ObjectNode parameterNode = root.putObject("parameters");
    parameters.forEach((name, value) -> parameterNode.set(name, Json.MAPPER.valueToTree(value)));
    ObjectNode resultNode = root.putObject("results");
    results.forEach((system, figures) -> {
      ObjectNode systemNode = resultNode.putObject(system);
      figures.forEach((figure, value) -> putNumber(systemNode, figure, value));
    });
    ObjectNode ratioNode = root.putObject("ratios");
    ratios.forEach(ratio -> putNumber(ratioNode, ratio.name(), ratio.value()));
    if (!ratioSpreads.isEmpty()) {
      ObjectNode spreadNode = root.putObject("ratio_spreads");
      ratioSpreads.forEach((name, spread) -> {
        ObjectNode each = spreadNode.putObject(name);
        putNumber(each, "min", spread.min());
        putNumber(each, "max", spread.max());
        putNumber(each, "median", spread.median());
        putNumber(each, "rsd_percent", spread.relativeStandardDeviationPercent());
        each.put("rounds", spread.rounds());
      });
    }
    if (!rounds.isEmpty()) {
      ArrayNode roundNode = root.putArray("rounds");
      for (Map<String, Object> round : rounds) {
        ObjectNode each = roundNode.addObject();
        round.forEach((column, value) -> {
          if (value instanceof Number number) {
            putNumber(each, column, number.doubleValue());
          } else {
            each.put(column, String.valueOf(value));
          }
        });
      }
    }
    ArrayNode goalNode = root.putArray("goals");
    List<Figure> withGoals = new ArrayList<>();
    ratios.stream().filter(ratio -> ratio.goal() != null).forEach(withGoals::add);
    withGoals.addAll(absoluteGoals);
    for (Figure figure : withGoals) {
      ObjectNode goal = goalNode.addObject();
      goal.put("name", figure.name());
      putNumber(goal, "value", figure.value());
      goal.put("goal", figure.goal().toString());
      goal.put("verdict", figure.goal().verdict(figure.value()));
    }
    ArrayNode failureNode = root.putArray("failures");
    failures.forEach(failureNode::add);
    return root;
  }

  /** Integral values are written as integers (counts), the others as decimals. */
  private static void putNumber(ObjectNode node, String name, double value) {
    if (!Double.isFinite(value)) {
      node.putNull(name); // not measured: JSON has no NaN
    } else if (value == Math.rint(value) && Math.abs(value) < 1L << 53) {
      node.put(name, (long) value);
    } else {
      node.put(name, value);
    }
  }

  public void writeJson(Path file) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Json.MAPPER.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), toJson());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }
}
