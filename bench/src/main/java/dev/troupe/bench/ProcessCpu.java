package dev.troupe.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * CPU time consumed by server processes, read from Linux's {@code /proc/<pid>/stat}: what a
 * benchmark divides its throughput by to compare how much work each configuration spends per
 * operation (on a machine shared with other work, CPU seconds are steadier than throughput).
 *
 * <p>A process's figure is its user and system time plus that of its children it has reaped
 * ({@code utime + stime + cutime + cstime}); a PostgreSQL server's is its postmaster's (which reaps
 * every backend that ended, so their time lands in its {@code cutime}) plus every backend still
 * running, so what backends consumed is counted once whether they ended between two readings or
 * not.
 */
final class ProcessCpu {
  /** Linux's USER_HZ: the unit of the times in {@code /proc/<pid>/stat}, 100 on every kernel we meet. */
  static final double TICKS_PER_SECOND = 100.0;
  private static final Path PROC = Path.of("/proc");

  private ProcessCpu() {}

  /** The fields of one {@code /proc/<pid>/stat} line that this class reads. */
  record Stat(long pid, long parentPid, long userTicks, long systemTicks, long childrenUserTicks,
      long childrenSystemTicks) {
    long ticksWithReapedChildren() {
      return userTicks + systemTicks + childrenUserTicks + childrenSystemTicks;
    }
  }

  /**
   * Parses a {@code /proc/<pid>/stat} line. The command name (field 2) is in parentheses and may
   * itself hold spaces and parentheses, so the fields after it are counted from the LAST ')'.
   *
   * @throws IllegalArgumentException if the line is not a stat line
   */
  static Stat parse(String line) {
    int open = line.indexOf('(');
    int close = line.lastIndexOf(')');
    if (open < 1 || close < open) {
      throw new IllegalArgumentException("not a /proc/<pid>/stat line: " + line);
    }
    long pid = Long.parseLong(line.substring(0, open).strip());
    // After ") ": field 3 (state) is index 0, so field n is index n - 3.
    String[] fields = line.substring(close + 1).strip().split(" +");
    if (fields.length < 15) {
      throw new IllegalArgumentException("a /proc/<pid>/stat line with too few fields: " + line);
    }
    return new Stat(pid, Long.parseLong(fields[4 - 3]), Long.parseLong(fields[14 - 3]),
        Long.parseLong(fields[15 - 3]), Long.parseLong(fields[16 - 3]),
        Long.parseLong(fields[17 - 3]));
  }

  /** The stat of process {@code pid}, or null if it does not exist (any more). */
  static Stat read(long pid) throws IOException {
    try {
      return parse(Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat")).strip());
    } catch (NoSuchFileException | IllegalArgumentException gone) {
      return null;
    }
  }

  /** CPU seconds of {@code pid} and its reaped children; 0 if it is gone. */
  static double secondsOf(long pid) throws IOException {
    Stat stat = read(pid);
    return stat == null ? 0 : stat.ticksWithReapedChildren() / TICKS_PER_SECOND;
  }

  /** CPU seconds of {@code parentPid}, its reaped children and its live children (see above). */
  static double secondsWithChildren(long parentPid) throws IOException {
    List<Stat> all;
    try (Stream<Path> entries = Files.list(PROC)) {
      all = entries.map(path -> path.getFileName().toString())
          .filter(name -> name.chars().allMatch(Character::isDigit))
          .map(name -> {
            try {
              return read(Long.parseLong(name));
            } catch (IOException unreadable) {
              return null;
            }
          })
          .filter(stat -> stat != null)
          .toList();
    }
    return ticksWithChildren(parentPid, all) / TICKS_PER_SECOND;
  }

  /** The ticks of {@code parentPid} (with reaped children) and of its live children, in {@code all}. */
  static long ticksWithChildren(long parentPid, List<Stat> all) {
    long ticks = 0;
    for (Stat stat : all) {
      if (stat.pid() == parentPid || stat.parentPid() == parentPid) {
        ticks += stat.ticksWithReapedChildren();
      }
    }
    return ticks;
  }

  /** The postmaster's pid of the PostgreSQL server on {@code dataDirectory}: postmaster.pid's first line. */
  static long postmasterPid(Path dataDirectory) throws IOException {
    return Long.parseLong(
        Files.readAllLines(dataDirectory.resolve("postmaster.pid")).get(0).strip());
  }
}
