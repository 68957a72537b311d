package dev.troupe.server;

import dev.troupe.storage.RocksDisk;
import dev.troupe.storage.RocksDiskSettings;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Damages a stopped store's files the way a failing disk does: bytes flipped in place; and the
 * data set the damage tests write first and check afterwards.
 */
final class Damage {
  /** Entities {@code Acct/a0 .. Acct/a299}, each with key {@code v} = {@code {"n": i, "pad": ...}}. */
  static final int ENTITIES = 300;

  private Damage() {}

  /** Writes the data set through {@code server}; every write must be acknowledged. */
  static void fill(ServerProcess server) throws Exception {
    for (int i = 0; i < ENTITIES; i++) {
      ServerProcess.Answer put = server.send("PUT", "/v1/entities/Acct/a" + i + "/keys/v",
          "{\"n\":" + i + ",\"pad\":\"" + "x".repeat(400) + "\"}");
      if (put.status() != 200) {
        throw new AssertionError("write " + i + " answered " + put.text());
      }
    }
  }

  /** Inverts {@code count} bytes of {@code file} from {@code offset}. */
  static void flip(Path file, long offset, int count) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      byte[] bytes = new byte[count];
      raf.seek(offset);
      raf.readFully(bytes);
      for (int i = 0; i < count; i++) {
        bytes[i] = (byte) ~bytes[i];
      }
      raf.seek(offset);
      raf.write(bytes);
    }
  }

  /**
   * Moves the stopped store's data out of its write-ahead log into table files, then flips 64
   * bytes a third of the way into the largest table file of {@code columnFamily} (its data blocks;
   * the index and footer are at the end). Returns the file.
   */
  static Path tableFile(Path directory, String columnFamily) throws Exception {
    Path file;
    // Without journal blob files, so that the journal's records land in its table files too.
    try (RocksDisk disk = RocksDisk.open(directory,
        RocksDiskSettings.defaults().withJournalBlobMinBytes(0))) {
      disk.flushMemtables();
      file = disk.tableFiles().stream()
          .filter(table -> table.columnFamily().equals(columnFamily))
          .max((a, b) -> Long.compare(a.sizeBytes(), b.sizeBytes()))
          .orElseThrow(() -> new AssertionError("no table file of " + columnFamily)).path();
    }
    flip(file, Files.size(file) / 3, 64);
    return file;
  }

  /**
   * Moves the stopped store's data out of its write-ahead log, the journal's records (of the
   * default blob threshold or more, as {@link #fill}'s are) into a blob file, then flips 64 bytes a
   * third of the way into the largest blob file: one record in the middle of the journal. Returns
   * the file.
   */
  static Path journalBlobFile(Path directory) throws Exception {
    try (RocksDisk disk = RocksDisk.open(directory, RocksDiskSettings.defaults())) {
      disk.flushMemtables();
    }
    Path file = largestFile(directory, ".blob");
    flip(file, Files.size(file) / 3, 64);
    return file;
  }

  /** The largest file in {@code directory} whose name ends with {@code suffix}. */
  private static Path largestFile(Path directory, String suffix) throws IOException {
    try (Stream<Path> files = Files.list(directory)) {
      return files.filter(path -> path.toString().endsWith(suffix))
          .max((a, b) -> Long.compare(a.toFile().length(), b.toFile().length()))
          .orElseThrow(() -> new AssertionError("no " + suffix + " file in " + directory));
    }
  }

  /** Flips 16 bytes in the middle of the largest write-ahead-log file. Returns the file. */
  static Path writeAheadLog(Path directory) throws IOException {
    Path log = largestFile(directory, ".log");
    if (Files.size(log) < 100_000) {
      throw new AssertionError("the writes are not in the log: " + Files.size(log) + " bytes");
    }
    flip(log, Files.size(log) / 2, 16);
    return log;
  }
}
