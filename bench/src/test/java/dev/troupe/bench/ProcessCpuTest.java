package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The CPU accounting {@code bench cluster} divides throughput by: /proc/<pid>/stat. */
class ProcessCpuTest {
  /** A real line (a JVM), fields 14-17 = utime 1234, stime 56, cutime 7, cstime 8. */
  private static final String JAVA_LINE = "4242 (java) S 17 4242 17 0 -1 4194560 52163 0 3 0"
      + " 1234 56 7 8 20 0 45 0 12345 3849175040 70193 18446744073709551615 1 1 0 0 0 0 0 4096"
      + " 16796879 0 0 0 17 1 0 0 0 0 0";

  @Test
  void readsTheTimesAfterTheCommandName() {
    ProcessCpu.Stat stat = ProcessCpu.parse(JAVA_LINE);
    assertEquals(4242, stat.pid());
    assertEquals(17, stat.parentPid());
    assertEquals(1234, stat.userTicks());
    assertEquals(56, stat.systemTicks());
    assertEquals(7, stat.childrenUserTicks());
    assertEquals(8, stat.childrenSystemTicks());
    assertEquals(1234 + 56 + 7 + 8, stat.ticksWithReapedChildren());
  }

  @Test
  void aCommandNameWithSpacesAndParenthesesDoesNotShiftTheFields() {
    ProcessCpu.Stat stat = ProcessCpu.parse(JAVA_LINE.replace("(java)",
        "(postgres: postgres troupe 127.0.0.1(5432) idle)"));
    assertEquals(17, stat.parentPid());
    assertEquals(1234, stat.userTicks());
    assertEquals(8, stat.childrenSystemTicks());
  }

  @Test
  void refusesWhatIsNotAStatLine() {
    assertThrows(IllegalArgumentException.class, () -> ProcessCpu.parse("no parentheses here"));
    assertThrows(IllegalArgumentException.class, () -> ProcessCpu.parse("1 (short) S 0 1"));
  }

  @Test
  void aServerCountsItselfItsReapedChildrenAndItsLiveChildrenNotOthers() {
    ProcessCpu.Stat postmaster = new ProcessCpu.Stat(100, 1, 10, 5, 300, 200);
    ProcessCpu.Stat backend = new ProcessCpu.Stat(101, 100, 40, 2, 0, 0);
    ProcessCpu.Stat anotherBackend = new ProcessCpu.Stat(102, 100, 3, 1, 0, 0);
    ProcessCpu.Stat stranger = new ProcessCpu.Stat(200, 1, 999, 999, 0, 0);
    assertEquals(15 + 500 + 42 + 4, ProcessCpu.ticksWithChildren(100,
        List.of(postmaster, backend, anotherBackend, stranger)));
  }

  @Test
  void readsThisProcessAndNothingForOneThatDoesNotExist() throws Exception {
    long self = ProcessHandle.current().pid();
    ProcessCpu.Stat stat = ProcessCpu.read(self);
    assertEquals(self, stat.pid());
    double own = ProcessCpu.secondsOf(self);
    assertTrue(own > 0, "a running JVM has used some CPU");
    assertTrue(ProcessCpu.secondsWithChildren(self) >= own, "read later, never less");
    assertNull(ProcessCpu.read(Long.MAX_VALUE));
    assertEquals(0, ProcessCpu.secondsOf(Long.MAX_VALUE));
  }
}
