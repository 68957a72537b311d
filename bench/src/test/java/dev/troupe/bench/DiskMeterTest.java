package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskMeterTest {
  @TempDir Path directory;

  @Test
  void readsTheDeviceBytesOfAProcIoText() {
    DiskMeter.DiskBytes bytes = DiskMeter.ProcessIo.parse("""
        rchar: 6976
        wchar: 120
        syscr: 10
        syscw: 2
        read_bytes: 4096
        write_bytes: 1228800
        cancelled_write_bytes: 0
        """);
    assertEquals(new DiskMeter.DiskBytes(4096, 1228800), bytes);
    assertThrows(IllegalArgumentException.class,
        () -> DiskMeter.ProcessIo.parse("rchar: 1\nwchar: 2\n"));
  }

  @Test
  void aSyncedWriteOfThisProcessIsCounted() throws Exception {
    DiskMeter meter = DiskMeter.process(ProcessHandle.current().pid());
    DiskMeter.DiskBytes before = meter.bytes();
    byte[] megabyte = new byte[1 << 20];
    new java.util.Random(1).nextBytes(megabyte);
    Path file = directory.resolve("written");
    try (var channel = java.nio.channels.FileChannel.open(file,
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
      channel.write(java.nio.ByteBuffer.wrap(megabyte));
      channel.force(true);
    }
    DiskMeter.DiskBytes written = meter.bytes().minus(before);
    // A file system in memory (tmpfs) sends nothing to a device: nothing to count there.
    boolean onADevice = !Files.getFileStore(file).type().equals("tmpfs");
    assertTrue(written.writtenBytes() >= (onADevice ? megabyte.length : 0),
        "synced 1 MB, counted " + written + " on " + Files.getFileStore(file).type());
    assertTrue(written.readBytes() >= 0, written.toString());
    // A parent's figure with its children is at least its own.
    DiskMeter.DiskBytes own = meter.bytes();
    DiskMeter.DiskBytes withChildren =
        DiskMeter.ProcessIo.withChildren(ProcessHandle.current().pid());
    assertTrue(withChildren.writtenBytes() >= own.writtenBytes(), withChildren + " < " + own);
  }
}
