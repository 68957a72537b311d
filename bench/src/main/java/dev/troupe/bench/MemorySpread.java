package dev.troupe.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How evenly a data centre's members hold its data in memory (issue 18: "entities and heap per
 * node ... goal max/min at most 1.2"): per member, the partitions it hosts, the records stored in
 * them (when the caller knows them), its entity actors, its object cache's estimated weight and
 * the cap the memory budget puts on it, and its heap in use right after a full collection it is
 * asked for ({@code jcmd <pid> GC.run}, then {@code GC.heap_info}); then max/min of each over the members. Used by {@code bench
 * cluster} (after its load) and {@code bench spread}.
 */
final class MemorySpread {
  static final Goal SPREAD_GOAL = Goal.atMost(1.2, "");
  /** The memory monitor hears of a collection by a notification, a moment after it. */
  private static final long AFTER_COLLECTION_MILLIS = 200;
  private static final long JCMD_TIMEOUT_SECONDS = 60;

  private MemorySpread() {}

  /**
   * Measures every member of {@code members} (member {@code i} has node id {@code i + 1}) and adds
   * the figures and ratios to {@code report}; {@code recordsPerMember} (node id -> records stored
   * in the partitions it hosts) may be empty when unknown.
   */
  static void measure(BenchReport report, List<TroupeProcess> members,
      Map<Integer, Long> recordsPerMember) throws IOException, InterruptedException {
    List<Double> partitions = new ArrayList<>();
    List<Double> records = new ArrayList<>();
    List<Double> actors = new ArrayList<>();
    List<Double> cacheBytes = new ArrayList<>();
    List<Double> heaps = new ArrayList<>();
    List<Double> oldGenerations = new ArrayList<>();
    for (int i = 0; i < members.size(); i++) {
      TroupeProcess member = members.get(i);
      forceFullCollection(member.pid());
      double heapUsed = heapUsedBytes(member.pid());
      String metrics = ClusterBenchmark.metricsOf(member);
      String name = "memory/member-" + (i + 1);
      double hosted = PrometheusText.value(metrics, "troupe_cluster_hosted_partitions", 0);
      double active = PrometheusText.value(metrics, "troupe_active_entities", 0);
      double cache = PrometheusText.value(metrics, "troupe_cache_weight_bytes", 0);
      double oldGenerationBytes = PrometheusText.value(metrics,
          "troupe_memory_heap_after_collection_bytes", -1);
      report.result(name, "hosted_partitions", hosted);
      report.result(name, "entities", active);
      report.result(name, "actor_limit",
          PrometheusText.value(metrics, "troupe_memory_actor_limit", -1));
      report.result(name, "estimated_actor_megabytes", PrometheusText.value(metrics,
          "troupe_memory_estimated_bytes{holder=\"actors\"}", 0) / (1 << 20));
      report.result(name, "cache_weight_megabytes", cache / (1 << 20));
      report.result(name, "cache_maximum_megabytes",
          PrometheusText.value(metrics, "troupe_memory_cache_maximum_bytes", -1) / (1 << 20));
      report.result(name, "memory_budget_scale",
          PrometheusText.value(metrics, "troupe_memory_budget_scale", -1));
      report.result(name, "heap_after_full_collection_megabytes", heapUsed / (1 << 20));
      report.result(name, "old_generation_after_full_collection_megabytes",
          oldGenerationBytes / (1 << 20));
      partitions.add(hosted);
      actors.add(active);
      cacheBytes.add(cache);
      heaps.add(heapUsed);
      oldGenerations.add(oldGenerationBytes);
      Long stored = recordsPerMember.get(i + 1);
      if (stored != null) {
        report.result(name, "records", stored);
        records.add(stored.doubleValue());
      }
    }
    report.ratio("hosted partitions max/min", max(partitions), min(partitions), null);
    if (!records.isEmpty()) {
      report.ratio("records max/min", max(records), min(records), SPREAD_GOAL);
    }
    // Reads fill the cache without activating actors: with none anywhere there is no ratio.
    if (max(actors) > 0) {
      report.ratio("entities max/min", max(actors), min(actors), SPREAD_GOAL);
    }
    if (max(cacheBytes) > 0) {
      report.ratio("cache weight max/min", max(cacheBytes), min(cacheBytes), SPREAD_GOAL);
    }
    report.ratio("heap max/min", max(heaps), min(heaps), SPREAD_GOAL);
    report.ratio("old generation max/min", max(oldGenerations), min(oldGenerations), null);
  }

  private static double max(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).max().orElse(0);
  }

  private static double min(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
  }

  /** {@code jcmd <pid> GC.run}: a full collection of that JVM, waited for. */
  static void forceFullCollection(long pid) throws IOException, InterruptedException {
    jcmd(pid, "GC.run");
    Thread.sleep(AFTER_COLLECTION_MILLIS);
  }

  /**
   * The JVM's heap in use now, every generation's "used" from {@code jcmd <pid> GC.heap_info}:
   * right after a full collection, what is live. (The old generation alone, which the server's
   * memory watch reports, misses what a parallel full collection left in the young generation.)
   */
  static double heapUsedBytes(long pid) throws IOException, InterruptedException {
    return heapUsedBytes(jcmd(pid, "GC.heap_info"));
  }

  /** The sum of the heap's "used NK" figures in {@code GC.heap_info} output (not metaspace). */
  static double heapUsedBytes(String heapInfo) {
    double used = 0;
    for (String line : heapInfo.lines().toList()) {
      String trimmed = line.strip();
      if (trimmed.startsWith("Metaspace") || trimmed.startsWith("class space")) {
        continue;
      }
      Matcher matcher = USED.matcher(trimmed);
      if (matcher.find()) {
        used += Long.parseLong(matcher.group(1)) * 1024.0;
      }
    }
    if (used == 0) {
      throw new BenchmarkException("no heap figure in GC.heap_info: " + heapInfo);
    }
    return used;
  }

  private static final Pattern USED = Pattern.compile("total \\d+K, used (\\d+)K");

  private static String jcmd(long pid, String command) throws IOException, InterruptedException {
    Process jcmd = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
        Long.toString(pid), command)
        .redirectErrorStream(true).start();
    byte[] output = jcmd.getInputStream().readAllBytes();
    if (!jcmd.waitFor(JCMD_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
      jcmd.destroyForcibly();
      throw new BenchmarkException("jcmd " + pid + " " + command + " did not finish within "
          + JCMD_TIMEOUT_SECONDS + " s");
    }
    return new String(output, java.nio.charset.StandardCharsets.UTF_8);
  }
}
