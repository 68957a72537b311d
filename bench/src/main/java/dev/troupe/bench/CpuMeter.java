package dev.troupe.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;

/**
 * The CPU time the processes serving one contender have used so far, read before and after a
 * round's measured window so that each side's CPU per operation is reported beside its throughput
 * (issue 20: on a shared machine CPU seconds are steadier than throughput, and they show which
 * side's own work a ratio comes from).
 */
interface CpuMeter {
  /** CPU seconds used so far; NaN when not measured. */
  double seconds() throws IOException;

  /** What is measured, for the report (e.g. "server process"). */
  String describe();

  /** Measures nothing. */
  CpuMeter NONE = new CpuMeter() {
    @Override
    public double seconds() {
      return Double.NaN;
    }

    @Override
    public String describe() {
      return "not measured";
    }
  };

  /**
   * This JVM: the benchmark's client and whatever it embeds (an engine, an in-process server).
   * Both sides of a comparison that runs in this JVM pay for the same client.
   */
  static CpuMeter thisJvm(String what) {
    return new CpuMeter() {
      @Override
      public double seconds() {
        if (ManagementFactory.getOperatingSystemMXBean()
            instanceof com.sun.management.OperatingSystemMXBean os) {
          return os.getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
      }

      @Override
      public String describe() {
        return what;
      }
    };
  }

  /** Process {@code pid} (and the children it reaped), e.g. a server started by the benchmark. */
  static CpuMeter process(long pid, String what) {
    return new CpuMeter() {
      @Override
      public double seconds() throws IOException {
        return ProcessCpu.secondsOf(pid);
      }

      @Override
      public String describe() {
        return what;
      }
    };
  }

  /** A PostgreSQL server: its postmaster, the backends it reaped and those still running. */
  static CpuMeter postgres(Path dataDirectory, String what) {
    return new CpuMeter() {
      @Override
      public double seconds() throws IOException {
        return ProcessCpu.secondsWithChildren(ProcessCpu.postmasterPid(dataDirectory));
      }

      @Override
      public String describe() {
        return what;
      }
    };
  }

  /** This meter's seconds plus {@code other}'s. */
  default CpuMeter plus(CpuMeter other) {
    CpuMeter self = this;
    return new CpuMeter() {
      @Override
      public double seconds() throws IOException {
        return self.seconds() + other.seconds();
      }

      @Override
      public String describe() {
        return self.describe() + " + " + other.describe();
      }
    };
  }
}
