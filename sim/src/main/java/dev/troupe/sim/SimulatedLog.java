package dev.troupe.sim;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * One append-only file on a simulated disk (a partition's journal, say), with the semantics of a
 * real one: appended bytes are visible at once but durable only once synced, and a crash keeps
 * the synced bytes plus, maybe, a torn prefix of the rest.
 *
 * <p><b>Format.</b> Each record is framed as {@code [length:int][crc32c:int][payload]}, so that
 * recovery reads records until the first one that is cut short or whose checksum fails, and
 * truncates the file there, as the real write-ahead log does.
 *
 * <p><b>Invariants.</b> After {@link #crash} and {@link #recover}, the records read back are
 * exactly a prefix of the records appended, and include every record appended before the last
 * {@link #sync}. A torn or corrupted record is never returned.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
public final class SimulatedLog {
  private static final int HEADER_BYTES = 8;

  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private int syncedLength;

  /** Appends one record (visible at once, durable after the next {@link #sync}). */
  public void append(byte[] payload) {
    CRC32C crc = new CRC32C();
    crc.update(payload);
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    header.putInt(payload.length).putInt((int) crc.getValue());
    bytes.writeBytes(header.array());
    bytes.writeBytes(payload);
  }

  /** Makes everything appended so far durable. */
  public void sync() {
    syncedLength = bytes.size();
  }

  /** Bytes appended but not yet synced. */
  public int unsyncedBytes() {
    return bytes.size() - syncedLength;
  }

  /**
   * Loses what a power cut loses: the unsynced bytes, except that with probability {@code
   * tornProbability} a random prefix of them survives (a torn write), and with probability
   * {@code corruptProbability} one surviving unsynced byte is flipped.
   */
  public void crash(SplittableRandom random, double tornProbability, double corruptProbability) {
    byte[] all = bytes.toByteArray();
    int keep = syncedLength;
    if (all.length > syncedLength && random.nextDouble() < tornProbability) {
      keep = syncedLength + random.nextInt(all.length - syncedLength + 1);
    }
    if (keep > syncedLength && random.nextDouble() < corruptProbability) {
      int at = syncedLength + random.nextInt(keep - syncedLength);
      all[at] ^= (byte) (1 + random.nextInt(255));
    }
    bytes.reset();
    bytes.write(all, 0, keep);
    // What survived is on the platter now, but only the synced part was promised.
  }

  /**
   * Reads the records back after a restart, stopping at the first torn or corrupted one and
   * truncating the file there; what is read is durable from now on.
   */
  public List<byte[]> recover() {
    byte[] all = bytes.toByteArray();
    List<byte[]> read = new ArrayList<>();
    int at = 0;
    while (at + HEADER_BYTES <= all.length) {
      ByteBuffer header = ByteBuffer.wrap(all, at, HEADER_BYTES);
      int length = header.getInt();
      int checksum = header.getInt();
      if (length < 0 || at + HEADER_BYTES + length > all.length) {
        break; // cut short
      }
      CRC32C crc = new CRC32C();
      crc.update(all, at + HEADER_BYTES, length);
      if ((int) crc.getValue() != checksum) {
        break; // corrupted
      }
      byte[] payload = new byte[length];
      System.arraycopy(all, at + HEADER_BYTES, payload, 0, length);
      read.add(payload);
      at += HEADER_BYTES + length;
    }
    bytes.reset();
    bytes.write(all, 0, at);
    syncedLength = at;
    return read;
  }
}
