package dev.troupe.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * The bytes the machine's storage devices have read and written so far (Linux's {@code
 * /sys/block/<device>/stat}), read around a load and around each measured round so that each
 * side's disk traffic per operation is reported beside its CPU (issue 20: with 2 M records both
 * sides were bound by the disk, and a load's bytes written per record is the write amplification
 * the user pays).
 *
 * <p>Why the devices and not the processes: a process's {@code /proc/<pid>/io} {@code
 * write_bytes} counts a page each time the process dirties it, so a log appended by small synced
 * writes counts its last page again at every commit. PostgreSQL's backends, committing one row
 * each, showed 139 KB written per 1 KB record loaded while the device took about 10 KB (sixth
 * session). The devices count what reached the disk, but for the whole machine: the harness
 * waits for an idle machine before each measured round, and what a side's background work
 * (compaction, checkpoints) writes later lands in whatever window is open then. What the page
 * cache absorbs is not counted.
 *
 * <p>Devices are the entries of {@code /sys/block} backed by hardware (a {@code device} link):
 * disks, not partitions, loop devices, RAM disks or device-mapper volumes stacked on the same
 * disks, so no byte is counted twice.
 */
interface DiskMeter {
  /** Bytes read from and written to storage devices; NaN when not measured. */
  record DiskBytes(double readBytes, double writtenBytes) {
    static final DiskBytes UNMEASURED = new DiskBytes(Double.NaN, Double.NaN);

    DiskBytes plus(DiskBytes other) {
      return new DiskBytes(readBytes + other.readBytes, writtenBytes + other.writtenBytes);
    }

    DiskBytes minus(DiskBytes earlier) {
      return new DiskBytes(readBytes - earlier.readBytes, writtenBytes - earlier.writtenBytes);
    }
  }

  DiskBytes bytes() throws IOException;

  /** Measures nothing. */
  DiskMeter NONE = () -> DiskBytes.UNMEASURED;

  /** The machine's storage devices under {@code /sys/block}. */
  DiskMeter MACHINE = () -> BlockDevices.total(Path.of("/sys/block"));

  /** Reads {@code meter}, or {@link DiskBytes#UNMEASURED} if it cannot be read (not Linux). */
  static DiskBytes readQuietly(DiskMeter meter) {
    try {
      return meter.bytes();
    } catch (IOException | RuntimeException unreadable) {
      return DiskBytes.UNMEASURED;
    }
  }

  /** Linux's block device statistics: the fields this meter reads. */
  final class BlockDevices {
    /** The unit of the sector counts in a device's {@code stat}, whatever its sector size. */
    static final int SECTOR_BYTES = 512;

    private BlockDevices() {}

    /**
     * The bytes of one {@code /sys/block/<device>/stat} line: its third field is sectors read, its
     * seventh sectors written (Documentation/block/stat.rst).
     *
     * @throws IllegalArgumentException if it is not such a line
     */
    static DiskBytes parse(String line) {
      String[] fields = line.strip().split("\\s+");
      if (fields.length < 7) {
        throw new IllegalArgumentException("not a block device stat line: " + line);
      }
      return new DiskBytes(Long.parseLong(fields[2]) * (double) SECTOR_BYTES,
          Long.parseLong(fields[6]) * (double) SECTOR_BYTES);
    }

    /** The sum over the hardware-backed devices under {@code blockDirectory}. */
    static DiskBytes total(Path blockDirectory) throws IOException {
      DiskBytes total = new DiskBytes(0, 0);
      try (Stream<Path> devices = Files.list(blockDirectory)) {
        for (Path device : devices.sorted().toList()) {
          if (Files.exists(device.resolve("device")) && Files.isReadable(device.resolve("stat"))) {
            total = total.plus(parse(Files.readString(device.resolve("stat"))));
          }
        }
      }
      return total;
    }
  }
}
