package dev.troupe.bench;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The bytes the processes serving one contender have had the kernel read from and write to the
 * storage devices so far ({@code read_bytes} and {@code write_bytes} of Linux's {@code
 * /proc/<pid>/io}), read around a load and around each measured round so that each side's disk
 * traffic per operation is reported beside its CPU (issue 20: with 2 M records both sides were
 * bound by the disk, and a load's bytes written per record is the write amplification the user
 * pays).
 *
 * <p>What the page cache absorbs is not counted: a read served from it reads nothing, and a write
 * counts when it is sent to the device (at a sync or a write-back), so bytes written just before
 * a window closes may land in the next one. A process's figures include its threads and the
 * children it has reaped; a PostgreSQL server's are its postmaster's plus every backend still
 * running, as {@link ProcessCpu} counts its CPU.
 */
interface DiskMeter {
  /** Bytes read from and written to storage devices so far; NaN when not measured. */
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

  /** Process {@code pid} (and the children it reaped), e.g. a server started by the benchmark. */
  static DiskMeter process(long pid) {
    return () -> {
      DiskBytes bytes = ProcessIo.read(pid);
      return bytes == null ? new DiskBytes(0, 0) : bytes;
    };
  }

  /** A PostgreSQL server: its postmaster, the backends it reaped and those still running. */
  static DiskMeter postgres(Path dataDirectory) {
    return () -> ProcessIo.withChildren(ProcessCpu.postmasterPid(dataDirectory));
  }

  /** This meter's bytes plus {@code other}'s. */
  default DiskMeter plus(DiskMeter other) {
    DiskMeter self = this;
    return () -> self.bytes().plus(other.bytes());
  }

  /** Reads {@code meter}, or {@link DiskBytes#UNMEASURED} if it cannot be read (not Linux). */
  static DiskBytes readQuietly(DiskMeter meter) {
    try {
      return meter.bytes();
    } catch (IOException | RuntimeException unreadable) {
      return DiskBytes.UNMEASURED;
    }
  }

  /** Linux's {@code /proc/<pid>/io}: the fields this meter reads. */
  final class ProcessIo {
    private static final Path PROC = Path.of("/proc");

    private ProcessIo() {}

    /**
     * Parses the text of a {@code /proc/<pid>/io} file ({@code name: value} lines).
     *
     * @throws IllegalArgumentException if it lacks {@code read_bytes} or {@code write_bytes}
     */
    static DiskBytes parse(String text) {
      long read = -1;
      long written = -1;
      for (String line : text.split("\n")) {
        int colon = line.indexOf(':');
        if (colon < 0) {
          continue;
        }
        String name = line.substring(0, colon).strip();
        if (name.equals("read_bytes")) {
          read = Long.parseLong(line.substring(colon + 1).strip());
        } else if (name.equals("write_bytes")) {
          written = Long.parseLong(line.substring(colon + 1).strip());
        }
      }
      if (read < 0 || written < 0) {
        throw new IllegalArgumentException("not a /proc/<pid>/io text: " + text);
      }
      return new DiskBytes(read, written);
    }

    /** The bytes of process {@code pid}, or null if it does not exist (any more). */
    static DiskBytes read(long pid) throws IOException {
      try {
        return parse(java.nio.file.Files.readString(
            PROC.resolve(Long.toString(pid)).resolve("io")));
      } catch (NoSuchFileException gone) {
        return null;
      }
    }

    /** The bytes of {@code parentPid} (with its reaped children) and of its live children. */
    static DiskBytes withChildren(long parentPid) throws IOException {
      DiskBytes total = new DiskBytes(0, 0);
      for (ProcessHandle process : ProcessHandle.of(parentPid).stream()
          .flatMap(parent -> java.util.stream.Stream.concat(
              java.util.stream.Stream.of(parent), parent.children()))
          .toList()) {
        DiskBytes bytes = read(process.pid());
        if (bytes != null) {
          total = total.plus(bytes);
        }
      }
      return total;
    }
  }
}
