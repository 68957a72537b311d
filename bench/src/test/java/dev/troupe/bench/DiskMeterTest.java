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
  void readsSectorsReadAndWrittenOfADeviceStatLine() {
    // reads, merged, sectors read, ms, writes, merged, sectors written, ms, in flight, ...
    DiskMeter.DiskBytes bytes = DiskMeter.BlockDevices.parse(
        "   41363930  1051228 2906034226 21788522 38562011 12416352 1467946664 99880364"
            + "        0 19463920 125034338   601412 0 52690320 1239564   2016118   2126890\n");
    assertEquals(new DiskMeter.DiskBytes(2906034226L * 512.0, 1467946664L * 512.0), bytes);
    assertThrows(IllegalArgumentException.class, () -> DiskMeter.BlockDevices.parse("1 2 3"));
  }

  /** Only devices backed by hardware count: a loop device or a partition would count twice. */
  @Test
  void sumsTheHardwareBackedDevicesOnly() throws Exception {
    Path block = directory.resolve("block");
    device(block, "vda", true, "1 0 10 0 1 0 20 0 0 0 0");
    device(block, "vdb", true, "1 0 1 0 1 0 2 0 0 0 0");
    device(block, "loop0", false, "1 0 1000 0 1 0 1000 0 0 0 0");
    assertEquals(new DiskMeter.DiskBytes(11 * 512.0, 22 * 512.0),
        DiskMeter.BlockDevices.total(block));
  }

  @Test
  void aSyncedWriteIsCountedOnThisMachine() throws Exception {
    DiskMeter.DiskBytes before = DiskMeter.MACHINE.bytes();
    byte[] megabyte = new byte[1 << 20];
    new java.util.Random(1).nextBytes(megabyte);
    Path file = directory.resolve("written");
    try (var channel = java.nio.channels.FileChannel.open(file,
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
      channel.write(java.nio.ByteBuffer.wrap(megabyte));
      channel.force(true);
    }
    DiskMeter.DiskBytes written = DiskMeter.MACHINE.bytes().minus(before);
    // A file system in memory (tmpfs) sends nothing to a device: nothing to count there.
    boolean onADevice = !Files.getFileStore(file).type().equals("tmpfs");
    assertTrue(written.writtenBytes() >= (onADevice ? megabyte.length : 0),
        "synced 1 MB, counted " + written + " on " + Files.getFileStore(file).type());
    assertTrue(written.readBytes() >= 0, written.toString());
  }

  private static void device(Path block, String name, boolean hardware, String stat)
      throws Exception {
    Path device = Files.createDirectories(block.resolve(name));
    Files.writeString(device.resolve("stat"), stat + "\n");
    if (hardware) {
      Files.createDirectories(device.resolve("device"));
    }
  }
}
