package dev.troupe.bench;

import java.lang.management.ManagementFactory;
import java.util.Locale;

/** What a benchmark ran on, recorded with its figures: cores, memory, OS and JVM. */
final class Machine {
  private Machine() {}

  static String describe() {
    long memoryBytes = 0;
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      memoryBytes = os.getTotalMemorySize();
    }
    return String.format(Locale.ROOT, "%d cores, %.1f GiB, %s %s (%s), Java %s",
        Runtime.getRuntime().availableProcessors(), memoryBytes / (1024.0 * 1024 * 1024),
        System.getProperty("os.name"), System.getProperty("os.version"),
        System.getProperty("os.arch"), System.getProperty("java.version"));
  }
}
