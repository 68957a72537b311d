package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.codec.CorruptFrameException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * {@code troupe check} and {@code troupe repair}: verify a stopped store, and rebuild what can be
 * rebuilt from what is intact, saying exactly what cannot be.
 *
 * <p><b>What is checked.</b> (1) The write-ahead log replays without damage before its tail. (2)
 * Every block checksum of every table file (RocksDB's, file by file, so each damaged file is
 * named). (3) Every key of every column family is read in order (cursor status checked), and every
 * value decoded with its own CRC32C and format checks: journal records, checkpoints, prepared parts
 * and decisions, positions in meta, replication log entries (each under its own key). (4) The index and the journal agree: every index entry points
 * to a journal record that exists, has the entry's commit timestamp and writes the entry's entity,
 * and every journal record's entities have their index entries. (5) A checkpoint's state is not
 * newer than its key.
 *
 * <p><b>What repair rebuilds</b>, and why it is exact: the index is derived data (an entry per
 * entity per retained journal record), so it is rebuilt whole from the journal. A checkpoint is
 * derived data while the journal below it is retained: in a store never truncated (history
 * horizons 0) every record of every entity is in the journal, so the intact checkpoints are kept,
 * the column family is dropped with its damaged file (unread: no read or compaction gets through
 * it) and the entities whose checkpoints were lost materialize from the journal. What repair cannot rebuild, and reports
 * for a restore from backup: damaged journal records (the source of truth; entities whose latest
 * state needs them are named), checkpoints of truncated partitions, two-phase-commit state, meta.
 * A damaged write-ahead log is given up from its damage on only with {@code
 * --accept-write-ahead-log-loss}, after the log files are copied aside.
 *
 * <p>Concurrency: runs alone on a stopped store (RocksDB's lock file refuses a second process).
 * Memory: index and journal are compared by point lookups, not held in memory.
 */
public final class StoreCheck {
  /** What a check found. {@code repairable}: {@code troupe repair} rebuilds it exactly. */
  public record Finding(String where, String problem, boolean repairable) {
    @Override
    public String toString() {
      return (repairable ? "[repairable] " : "[NOT repairable] ") + where + ": " + problem;
    }
  }

  /**
   * A check's result.
   *
   * @param findings damage and disagreements, in the order found
   * @param keysRead keys read per column family
   * @param actions what a repair did (empty for a check)
   */
  public record Report(List<Finding> findings, Map<String, Long> keysRead, List<String> actions) {
    public boolean clean() {
      return findings.isEmpty();
    }

    public boolean fullyRepairable() {
      return findings.stream().allMatch(Finding::repairable);
    }

    /** The report for people: one line per finding and action, and a summary. */
    public String render() {
      StringBuilder out = new StringBuilder();
      keysRead.forEach((column, count) ->
          out.append("read ").append(count).append(" keys of ").append(column).append('\n'));
      for (String action : actions) {
        out.append("repaired: ").append(action).append('\n');
      }
      for (Finding finding : findings) {
        out.append(finding).append('\n');
      }
      out.append(clean() ? "the store is intact\n"
          : findings.size() + " problem(s) found; "
              + (fullyRepairable() ? "troupe repair rebuilds all of them"
                  : "some cannot be rebuilt from this store: restore those from a backup")
              + '\n');
      return out.toString();
    }
  }

  private final List<Finding> findings = new ArrayList<>();
  private final Map<String, Long> keysRead = new LinkedHashMap<>();
  /** Key ranges of damaged table files per column: scans skip past them. */
  private final Map<KeyValueDisk.Column, List<byte[][]>> damagedRanges = new LinkedHashMap<>();
  /** Whether every partition still holds its whole journal (never truncated). */
  private boolean journalComplete = true;

  private StoreCheck() {}

  /** Verifies the stopped store in {@code directory}; changes nothing on disk. */
  public static Report check(Path directory) {
    StoreCheck check = new StoreCheck();
    try (RocksDisk disk = check.openForInspection(directory)) {
      check.verify(disk);
    }
    return check.report();
  }

  /**
   * Repairs the stopped store in {@code directory}: rebuilds what is repairable, then checks again
   * and reports what remains.
   *
   * @param acceptWriteAheadLogLoss give up the write-ahead log from its first damage on (its
   *     files are copied to {@code directory/damaged-<millis>} first); without it, a damaged log
   *     is reported and nothing is changed
   */
  public static Report repair(Path directory, boolean acceptWriteAheadLogLoss) {
    List<String> actions = new ArrayList<>();
    RocksDisk.OpenMode mode = RocksDisk.OpenMode.SERVE;
    try {
      // Only to learn whether the write-ahead log replays; the store is read in full below.
      RocksDisk.open(directory, RocksDisk.OpenMode.INSPECT).close();
    } catch (CorruptDataException damagedLog) {
      if (!acceptWriteAheadLogLoss) {
        Report found = check(directory);
        return new Report(found.findings(), found.keysRead(), List.of(
            "nothing changed: the write-ahead log is damaged; rerun with"
                + " --accept-write-ahead-log-loss to give up every write from its damage on"));
      }
      Path aside = directory.resolve("damaged-" + System.currentTimeMillis());
      copyWriteAheadLog(directory, aside);
      actions.add("write-ahead log: copied to " + aside + ", then replayed up to its first"
          + " damage; every write after it is lost (how many cannot be known from the log)");
      mode = RocksDisk.OpenMode.RECOVER_UP_TO_DAMAGE;
    }
    try (RocksDisk disk = RocksDisk.open(directory, mode)) {
      // Table files only from here on: the repair must not depend on the log it may have cut.
      disk.flushMemtables();
      StoreCheck found = new StoreCheck();
      found.verify(disk);
      boolean rebuildIndex = found.findings.stream()
          .anyMatch(finding -> finding.repairable() && finding.where().startsWith("index"));
      boolean checkpointsDamaged = found.findings.stream()
          .anyMatch(finding -> finding.where().startsWith("checkpoints"));
      if (checkpointsDamaged && found.journalComplete) {
        long kept = rebuildCheckpoints(disk, found.damagedRanges);
        actions.add("checkpoints: damaged table file dropped, " + kept + " intact checkpoints"
            + " kept; the entities whose checkpoints were lost materialize from the journal,"
            + " which holds their whole history");
      }
      if (rebuildIndex) {
        long entries = rebuildIndex(disk, found.damagedRanges);
        actions.add("index: rebuilt from the journal (" + entries + " entries)");
      }
      if (found.findings.stream().anyMatch(finding -> finding.where().startsWith("listing"))) {
        // Dropped unread with any damaged files, and its built marker deleted: the next open
        // builds it again from the index and checkpoints (ListingIndex.buildIfAbsent).
        disk.recreateColumn(KeyValueDisk.Column.LISTING);
        try (KeyValueDisk.Batch batch = disk.newBatch()) {
          batch.delete(KeyValueDisk.Column.META, ListingIndex.META_BUILT);
          disk.write(batch, true);
        }
        actions.add("listing index: dropped; the next open of the store builds it again from"
            + " the index and checkpoints");
      }
      disk.flushMemtables();
    } catch (DiskException e) {
      throw new UncheckedIOException(new IOException("repair failed: " + e.getMessage(), e));
    }
    Report after = check(directory);
    return new Report(after.findings(), after.keysRead(), actions);
  }

  private Report report() {
    return new Report(List.copyOf(findings),
        Collections.unmodifiableMap(new LinkedHashMap<>(keysRead)), List.of());
  }

  /**
   * Opens read-only; a write-ahead log damaged before its tail is a finding, and the rest is then
   * checked as the log stands up to its damage.
   */
  private RocksDisk openForInspection(Path directory) {
    try {
      return RocksDisk.open(directory, RocksDisk.OpenMode.INSPECT);
    } catch (CorruptDataException damaged) {
      findings.add(new Finding("write-ahead log", damaged.getCause() == null
          ? damaged.getMessage() : damaged.getCause().getMessage()
              + "; every write from the damage on is unreadable (troupe repair"
              + " --accept-write-ahead-log-loss gives them up; the rest is checked as the log"
              + " stands up to the damage)", false));
      return RocksDisk.open(directory, RocksDisk.OpenMode.INSPECT_UP_TO_DAMAGE);
    }
  }

  private void verify(RocksDisk disk) {
    for (RocksDisk.TableFile file : disk.tableFiles()) {
      String damage = disk.verifyTableFile(file.path());
      if (damage == null) {
        continue;
      }
      KeyValueDisk.Column column = columnNamed(file.columnFamily());
      byte[][] range = disk.tableFileRange(file.path());
      if (column != null && range != null) {
        damagedRanges.computeIfAbsent(column, c -> new ArrayList<>()).add(range);
      }
      findings.add(new Finding(file.columnFamily() + " table file " + file.path().getFileName(),
          damage + describeRange(column, range), false));
    }
    try {
      checkMeta(disk);
      checkJournal(disk);
      checkIndex(disk);
      checkCheckpoints(disk);
      checkTransactions(disk);
      checkReplicationLog(disk);
      checkListing(disk);
    } catch (DiskException e) {
      throw new UncheckedIOException(new IOException("check failed: " + e.getMessage(), e));
    }
    // A damaged checkpoint file is repairable when the journal below it is whole; mark it so.
    List<Finding> marked = new ArrayList<>(findings.size());
    for (Finding finding : findings) {
      // Every damage to checkpoints (a table file, a scan that stopped, a checkpoint failing its
      // own checksum) is rebuilt the same way; a checkpoint newer than its key is not damage.
      boolean rebuildable = finding.where().startsWith("checkpoints") && journalComplete
          || finding.where().startsWith("index") || finding.where().startsWith("listing");
      marked.add(rebuildable ? new Finding(finding.where(), finding.problem(), true) : finding);
    }
    findings.clear();
    findings.addAll(marked);
  }

  private static String describeRange(KeyValueDisk.Column column, byte[][] range) {
    if (column == null || range == null) {
      return "";
    }
    return switch (column) {
      case CHECKPOINTS, INDEX -> "; keys of entities " + describeEntityKey(range[0]) + " to "
          + describeEntityKey(range[1]);
      case JOURNAL -> "; journal records " + describeJournalKey(range[0]) + " to "
          + describeJournalKey(range[1]);
      default -> "";
    };
  }

  private static KeyValueDisk.Column columnNamed(String name) {
    for (KeyValueDisk.Column column : KeyValueDisk.Column.values()) {
      if (RocksDisk.columnFamilyName(column).equals(name)) {
        return column;
      }
    }
    return null;
  }

  // ------------------------------------------------------------------------------------ scans

  /** Visits every key of a column; at damage, skips past the damaged file's range if known. */
  private interface Visitor {
    void visit(byte[] key, byte[] value) throws DiskException;
  }

  private void scan(KeyValueDisk disk, KeyValueDisk.Column column, Visitor visitor)
      throws DiskException {
    String name = RocksDisk.columnFamilyName(column);
    long count = 0;
    byte[] last = null;
    try (KeyValueDisk.Cursor cursor = disk.cursor(column)) {
      cursor.seekToFirst();
      while (true) {
        boolean valid;
        try {
          valid = cursor.isValid();
        } catch (CorruptDataException damage) {
          byte[] resume = resumeAfterDamage(column, last);
          findings.add(new Finding(name, "reading stopped at damage after "
              + (last == null ? "the first key" : describeKey(column, last))
              + (resume == null ? "; the rest of the column family could not be read"
                  : "; resumed after the damaged table file") + ": " + damage.getMessage(),
              false));
          if (resume == null) {
            break;
          }
          cursor.seek(resume);
          last = null;
          continue;
        }
        if (!valid) {
          break;
        }
        byte[] key = cursor.key();
        count++;
        last = key;
        try {
          visitor.visit(key, cursor.value());
        } catch (CorruptDataException damage) {
          String where = column == KeyValueDisk.Column.JOURNAL
              ? describeKey(column, key) : name + " " + describeKey(column, key);
          findings.add(new Finding(where, damage.getMessage(), false));
        }
        cursor.next();
      }
    }
    keysRead.merge(name, count, Long::sum);
  }

  /** The first key after the damaged table file that holds keys after {@code last}, or null. */
  private byte[] resumeAfterDamage(KeyValueDisk.Column column, byte[] last) {
    byte[] best = null;
    for (byte[][] range : damagedRanges.getOrDefault(column, List.of())) {
      if (last == null || Arrays.compareUnsigned(range[1], last) >= 0) {
        byte[] after = Arrays.copyOf(range[1], range[1].length + 1); // the next key in byte order
        if (best == null || Arrays.compareUnsigned(after, best) < 0) {
          best = after;
        }
      }
    }
    return best;
  }

  private void checkMeta(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.META, (key, value) -> {
      if (Arrays.equals(key, Keys.META_PEERS)) {
        Codec.decodePeers(value); // the one meta record that is not a position
        return;
      }
      JournalPosition position = Codec.decodePosition(value);
      if (key.length == 3 && key[0] == 'H' && position.sequence() > 0) {
        journalComplete = false; // a truncated partition: checkpoints below its horizon are unique
      }
    });
  }

  private void checkJournal(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.JOURNAL, (key, value) -> {
      TransactionRecord record = Codec.decodeRecord(value);
      int partition = Keys.journalPartition(key);
      long sequence = Keys.journalSequence(key);
      for (EntityWrite write : record.writes()) {
        byte[] index = Keys.index(Keys.entityPrefix(write.entity()), record.commitTimestamp(),
            partition, sequence);
        if (disk.get(KeyValueDisk.Column.INDEX, index) == null) {
          findings.add(new Finding("index of " + write.entity(), "no entry for journal record "
              + partition + "/" + sequence + " that writes it", true));
        }
      }
    });
  }

  private void checkIndex(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.INDEX, (key, value) -> {
      int prefixLength = 2 + (((key[0] & 0xFF) << 8) | (key[1] & 0xFF));
      EntityId entity = EntityId.fromBytes(Arrays.copyOfRange(key, 2, prefixLength));
      long timestamp = Keys.indexTimestamp(key, prefixLength);
      byte[] journalKey = Keys.indexJournalKey(key, prefixLength);
      byte[] stored;
      try {
        stored = disk.get(KeyValueDisk.Column.JOURNAL, journalKey);
      } catch (CorruptDataException damage) {
        findings.add(new Finding("journal record " + describeJournalKey(journalKey),
            "damaged, and " + entity + " needs it (its state at " + timestamp
                + " and after cannot be built without it): " + damage.getMessage(), false));
        return;
      }
      if (stored == null) {
        findings.add(new Finding("index of " + entity, "entry at " + timestamp
            + " points to journal record " + describeJournalKey(journalKey) + ", which is missing",
            true));
        return;
      }
      TransactionRecord record = Codec.decodeRecord(stored);
      if (record.commitTimestamp() != timestamp
          || Materializer.operationsOf(record, entity) == null) {
        findings.add(new Finding("index of " + entity, "entry at " + timestamp
            + " points to journal record " + describeJournalKey(journalKey)
            + ", which does not write it at that timestamp", true));
      }
    });
  }

  private void checkCheckpoints(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.CHECKPOINTS, (key, value) -> {
      EntityState state = Codec.decodeState(value);
      long version = Keys.checkpointTimestamp(key);
      if (state.version() > version) {
        findings.add(new Finding("checkpoint " + describeEntityKey(key), "holds version "
            + state.version() + ", newer than its key " + version, false));
      }
    });
  }

  /**
   * The listing index agrees with the entity index: every entity with an index entry or a
   * checkpoint has its listing key, and every listing key is an entity's (a key is never deleted,
   * so one without records is normal: the entity's records were truncated after its deletion).
   * Checked only once the index is marked built: a store written before it gets it at its next
   * open. One scan of the listing column (every key decodes), then one of each entity column with
   * a point read of the listing per entity met (each once), so memory does not grow with the store.
   */
  private void checkListing(KeyValueDisk disk) throws DiskException {
    if (!ListingIndex.built(disk)) {
      return;
    }
    scan(disk, KeyValueDisk.Column.LISTING, (key, value) -> {
      try {
        EntityId.fromBytes(key);
      } catch (RuntimeException notAnEntity) {
        throw new CorruptDataException("a listing key is not an entity's: "
            + notAnEntity.getMessage());
      }
    });
    for (KeyValueDisk.Column column
        : List.of(KeyValueDisk.Column.INDEX, KeyValueDisk.Column.CHECKPOINTS)) {
      byte[][] previous = {null};
      scan(disk, column, (key, value) -> {
        int prefixLength = 2 + (((key[0] & 0xFF) << 8) | (key[1] & 0xFF));
        byte[] entityBytes = Arrays.copyOfRange(key, 2, prefixLength);
        if (Arrays.equals(entityBytes, previous[0])) {
          return; // the entity's other entries: checked once
        }
        previous[0] = entityBytes;
        if (disk.get(KeyValueDisk.Column.LISTING, entityBytes) == null) {
          findings.add(new Finding("listing index of " + EntityId.fromBytes(entityBytes),
              "no listing key, though the " + RocksDisk.columnFamilyName(column)
                  + " column holds the entity", true));
        }
      });
    }
  }

  private void checkTransactions(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.TRANSACTIONS, (key, value) -> {
      switch (key[0]) {
        case Keys.PREPARED_TAG -> Codec.decodePrepared(value);
        case Keys.DECIDED_TAG -> Codec.decodeDecided(value);
        case Keys.IDEMPOTENCY_TAG -> Codec.decodeIdempotency(value);
        default -> throw new CorruptDataException("unknown key tag " + key[0]);
      }
    });
  }

  /** Every replication log entry decodes (its own CRC32C) and sits under its own key. */
  private void checkReplicationLog(KeyValueDisk disk) throws DiskException {
    scan(disk, KeyValueDisk.Column.REPLICATION, (key, value) -> {
      dev.troupe.model.causal.ReplicationEntry entry;
      try {
        entry = dev.troupe.model.causal.ReplicationCodec.decodeEntry(value);
      } catch (CorruptFrameException damage) {
        throw new CorruptDataException(damage.getMessage(), damage);
      }
      if (key.length != 24 || !Arrays.equals(key, Keys.replication(entry.originDc(),
          entry.timestamp(), entry.transactionId(), entry.index()))) {
        throw new CorruptDataException("the entry of origin " + entry.originDc() + " at "
            + entry.timestamp() + " is stored under another key");
      }
    });
  }

  // ---------------------------------------------------------------------------------- repair

  /**
   * Replaces the whole index by the entries the journal implies: drops its table files unread
   * (they may be damaged), deletes whatever else it holds, and writes one entry per entity per
   * readable journal record. Returns the entries written.
   */
  private static long rebuildIndex(
      RocksDisk disk, Map<KeyValueDisk.Column, List<byte[][]>> damagedRanges)
      throws DiskException {
    disk.recreateColumn(KeyValueDisk.Column.INDEX);
    StoreCheck journalReader = new StoreCheck();
    journalReader.damagedRanges.putAll(damagedRanges);
    long[] written = {0};
    KeyValueDisk.Batch[] batch = {disk.newBatch()};
    journalReader.scan(disk, KeyValueDisk.Column.JOURNAL, (key, value) -> {
      TransactionRecord record = Codec.decodeRecord(value);
      for (EntityWrite write : record.writes()) {
        batch[0].put(KeyValueDisk.Column.INDEX, Keys.index(Keys.entityPrefix(write.entity()),
            record.commitTimestamp(), Keys.journalPartition(key), Keys.journalSequence(key)),
            Keys.EMPTY);
        if (++written[0] % 4096 == 0) {
          disk.write(batch[0], false);
          batch[0].close();
          batch[0] = disk.newBatch();
        }
      }
    });
    disk.write(batch[0], true);
    batch[0].close();
    return written[0];
  }

  /**
   * Keeps every checkpoint that still reads intact, drops the column family with its damaged file
   * and writes the kept ones back. Returns how many were kept.
   */
  private static long rebuildCheckpoints(
      RocksDisk disk, Map<KeyValueDisk.Column, List<byte[][]>> damagedRanges)
      throws DiskException {
    StoreCheck reader = new StoreCheck();
    reader.damagedRanges.putAll(damagedRanges);
    List<byte[][]> intact = new ArrayList<>();
    reader.scan(disk, KeyValueDisk.Column.CHECKPOINTS, (key, value) -> {
      Codec.decodeState(value); // throws, and so skips it, if its own checksum fails
      intact.add(new byte[][] {key, value});
    });
    disk.recreateColumn(KeyValueDisk.Column.CHECKPOINTS);
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      for (byte[][] entry : intact) {
        batch.put(KeyValueDisk.Column.CHECKPOINTS, entry[0], entry[1]);
      }
      disk.write(batch, true);
    }
    return intact.size();
  }

  private static void copyWriteAheadLog(Path directory, Path aside) {
    try (Stream<Path> files = Files.list(directory)) {
      Files.createDirectories(aside);
      for (Path file : files.filter(path -> path.getFileName().toString().endsWith(".log"))
          .toList()) {
        Files.copy(file, aside.resolve(file.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot copy the write-ahead log aside to " + aside, e);
    }
  }

  // ------------------------------------------------------------------------------ describing

  private static String describeKey(KeyValueDisk.Column column, byte[] key) {
    return switch (column) {
      case JOURNAL -> "journal record " + describeJournalKey(key);
      case INDEX, CHECKPOINTS -> describeEntityKey(key);
      default -> "key " + java.util.HexFormat.of().formatHex(key);
    };
  }

  private static String describeJournalKey(byte[] key) {
    return key.length >= 10
        ? Keys.journalPartition(key) + "/" + Keys.journalSequence(key)
        : java.util.HexFormat.of().formatHex(key);
  }

  /** The entity an index or checkpoint key belongs to, as type/id where it decodes. */
  private static String describeEntityKey(byte[] key) {
    if (key.length >= 2) {
      int length = ((key[0] & 0xFF) << 8) | (key[1] & 0xFF);
      if (key.length >= 2 + length) {
        try {
          return EntityId.fromBytes(Arrays.copyOfRange(key, 2, 2 + length)).toString();
        } catch (RuntimeException undecodable) {
          // fall through to hex
        }
      }
    }
    return java.util.HexFormat.of().formatHex(key);
  }
}
