package dev.troupe.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The YCSB workloads {@code troupe bench ycsb} runs: the standard core workloads (the mixes and
 * request distributions of YCSB's {@code workloads/workload[a-f]} files) and the D-Thespis paper's
 * read/update mixes (§5: 90/10, 80/20, 65/35, zipfian). Workload E (short range scans: 95% scans
 * of 1 to 100 records from a zipfian start key, 5% inserts, as YCSB's {@code workloade}) scans
 * through the listing ({@code GET /v1/entities/{type}?from=&limit=&states=true}).
 *
 * <p>Every workload uses 1 KB records, 10 fields of 100 bytes, in the schemaless entity type
 * {@code usertable}; reads read every field, updates write one.
 */
final class YcsbWorkloads {
  private YcsbWorkloads() {}

  /** A named mix. */
  record Workload(String name, String description, Map<String, String> properties) {
    /** Whether the mix only reads (the one compared against the bare HTTP ceiling). */
    boolean readOnly() {
      return "1.0".equals(properties.get("readproportion"));
    }
  }

  private static final Map<String, Workload> WORKLOADS = new LinkedHashMap<>();

  static {
    add("a", "update heavy: 50% reads, 50% updates, zipfian",
        "0.5", "0.5", "0", "0", "zipfian");
    add("b", "read mostly: 95% reads, 5% updates, zipfian",
        "0.95", "0.05", "0", "0", "zipfian");
    add("c", "read only: 100% reads, zipfian",
        "1.0", "0", "0", "0", "zipfian");
    add("d", "read latest: 95% reads, 5% inserts, latest",
        "0.95", "0", "0.05", "0", "latest");
    add("e", "short ranges: 95% scans of 1 to 100 records, 5% inserts, zipfian start",
        "0", "0", "0.05", "0", "zipfian");
    WORKLOADS.put("e", withScans(WORKLOADS.get("e"), "0.95", "100", "uniform"));
    add("f", "read-modify-write: 50% reads, 50% read-modify-writes, zipfian",
        "0.5", "0", "0", "0.5", "zipfian");
    add("90-10", "D-Thespis mix: 90% reads, 10% updates, zipfian",
        "0.9", "0.1", "0", "0", "zipfian");
    add("80-20", "D-Thespis mix: 80% reads, 20% updates, zipfian",
        "0.8", "0.2", "0", "0", "zipfian");
    add("65-35", "D-Thespis mix: 65% reads, 35% updates, zipfian",
        "0.65", "0.35", "0", "0", "zipfian");
  }

  private static void add(String name, String description, String read, String update,
      String insert, String readModifyWrite, String distribution) {
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put("readproportion", read);
    properties.put("updateproportion", update);
    properties.put("insertproportion", insert);
    properties.put("readmodifywriteproportion", readModifyWrite);
    properties.put("scanproportion", "0");
    properties.put("requestdistribution", distribution);
    WORKLOADS.put(name, new Workload(name, description, Map.copyOf(properties)));
  }

  /** {@code workload} with a scan proportion, YCSB's maximum scan length and its distribution. */
  private static Workload withScans(Workload workload, String proportion, String maxLength,
      String lengthDistribution) {
    Map<String, String> properties = new LinkedHashMap<>(workload.properties());
    properties.put("scanproportion", proportion);
    properties.put("maxscanlength", maxLength);
    properties.put("scanlengthdistribution", lengthDistribution);
    return new Workload(workload.name(), workload.description(), Map.copyOf(properties));
  }

  static List<String> names() {
    return List.copyOf(WORKLOADS.keySet());
  }

  /**
   * The workload called {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException naming the known workloads if there is none
   */
  static Workload named(String name) {
    Workload workload = WORKLOADS.get(name.toLowerCase(java.util.Locale.ROOT));
    if (workload == null) {
      throw new IllegalArgumentException("unknown workload '" + name + "'; known: "
          + String.join(", ", WORKLOADS.keySet()));
    }
    return workload;
  }

  /** YCSB properties for {@code workload} over {@code records} records. */
  static Properties properties(Workload workload, long records) {
    Properties properties = new Properties();
    properties.setProperty("table", "usertable");
    properties.setProperty("recordcount", Long.toString(records));
    // Runs are timed, not counted; CoreWorkload only sizes the zipfian key space's room for new
    // inserts from this, and the zipfian workloads insert nothing.
    properties.setProperty("operationcount", Long.toString(records));
    properties.setProperty("fieldcount", "10");
    properties.setProperty("fieldlength", "100");
    properties.setProperty("readallfields", "true");
    properties.setProperty("writeallfields", "false");
    properties.setProperty("insertorder", "hashed");
    properties.setProperty("measurementtype", "histogram");
    workload.properties().forEach(properties::setProperty);
    return properties;
  }
}
