package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.storage.KeyValueDisk.Column;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link PostgresDisk} keeps the {@link KeyValueDiskContract}, on a real PostgreSQL (one server
 * for the class, a new database per test); and here what is PostgreSQL's own: durability across
 * a crash of the database server, the connection pool's limit, the schema's format version, and
 * page checksums.
 */
class PostgresDiskContractTest extends KeyValueDiskContract {
  @RegisterExtension static final TestPostgres postgres = new TestPostgres();


  @Override
  protected KeyValueDisk openDisk() {
    return postgres.open(postgres.newDatabase());
  }

  @Test
  void aSyncOrAWriteAheadLogFlushMakesEveryEarlierBatchDurableAcrossAServerCrash()
      throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      for (int i = 0; i < 50; i++) {
        put(disk, Column.JOURNAL, bytes(0, i), bytes(i), false);
      }
      disk.flushWriteAheadLog(true);
      for (int i = 0; i < 50; i++) {
        put(disk, Column.INDEX, bytes(0, i), bytes(i), false);
      }
      put(disk, Column.META, bytes(1), bytes(1), true);
    }
    postgres.server().crash();
    postgres.server().restart();
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      for (int i = 0; i < 50; i++) {
        assertArrayEquals(bytes(i), disk.get(Column.JOURNAL, bytes(0, i)), "flushed " + i);
        assertArrayEquals(bytes(i), disk.get(Column.INDEX, bytes(0, i)), "before a sync " + i);
      }
      assertArrayEquals(bytes(1), disk.get(Column.META, bytes(1)));
    }
  }

  @Test
  void anExhaustedPoolFailsWithinItsTimeoutAndRecovers() throws Exception {
    PostgresDiskSettings database =
        postgres.newDatabase().withMaximumPoolSize(2).withConnectionTimeoutMillis(500);
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      put(disk, Column.META, bytes(1), bytes(1), true);
      KeyValueDisk.Snapshot first = disk.snapshot();
      KeyValueDisk.Snapshot second = disk.snapshot();
      long started = System.nanoTime();
      DiskException refused =
          assertThrows(DiskException.class, () -> disk.get(Column.META, bytes(1)));
      assertTrue(System.nanoTime() - started < 5_000_000_000L, "waited about the timeout");
      assertTrue(refused.getMessage().contains("no PostgreSQL connection within 500 ms"),
          refused.getMessage());
      assertThrows(DiskException.class, () -> put(disk, Column.META, bytes(2), bytes(2), true));
      try (KeyValueDisk.Cursor cursor = disk.cursor(Column.META)) {
        cursor.seekToFirst();
        assertThrows(UncheckedIOException.class, cursor::isValid);
      }
      // Reads at a snapshot use its own connection.
      assertArrayEquals(bytes(1),
          disk.multiGet(Column.META, java.util.List.of(bytes(1)), first).get(0));
      first.close();
      second.close();
      assertArrayEquals(bytes(1), disk.get(Column.META, bytes(1)));
      assertEquals(null, disk.get(Column.META, bytes(2)), "the refused write wrote nothing");
    }
  }

  @Test
  void theSchemaIsCreatedOnceAndAnotherFormatVersionIsRefused() throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      put(disk, Column.META, bytes(1), bytes(1), true);
    }
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      assertArrayEquals(bytes(1), disk.get(Column.META, bytes(1)), "reopening keeps the data");
    }
    try (Connection connection = DriverManager.getConnection(database.jdbcUrl());
        Statement statement = connection.createStatement()) {
      statement.execute("UPDATE troupe_schema SET format_version = 99");
    }
    IllegalStateException refused =
        assertThrows(IllegalStateException.class, () -> PostgresDisk.open(database));
    assertTrue(refused.getMessage().contains("format version 99"), refused.getMessage());
  }

  @Test
  void aDamagedPageFailsItsReadsWithCorruptData() throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        for (int i = 0; i < 40; i++) {
          batch.put(Column.CHECKPOINTS, bytes(i), new byte[100]);
        }
        disk.write(batch, true);
      }
    }
    String relation;
    try (Connection connection = DriverManager.getConnection(database.jdbcUrl());
        Statement statement = connection.createStatement()) {
      statement.execute("CHECKPOINT"); // the page is in its data file now
      try (ResultSet result = statement.executeQuery(
          "SELECT pg_relation_filepath('" + PostgresDisk.tableName(Column.CHECKPOINTS) + "')")) {
        result.next();
        relation = result.getString(1);
      }
    }
    postgres.server().crash();
    Path file = postgres.server().dataDirectory().resolve(relation);
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
      channel.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), 4000);
    }
    postgres.server().restart();
    try (PostgresDisk disk = PostgresDisk.open(database)) {
      assertThrows(CorruptDataException.class, () -> disk.get(Column.CHECKPOINTS, bytes(3)));
      try (KeyValueDisk.Cursor cursor = disk.cursor(Column.CHECKPOINTS)) {
        cursor.seekToFirst();
        assertThrows(CorruptDataException.class, cursor::isValid);
      }
    }
  }
}
