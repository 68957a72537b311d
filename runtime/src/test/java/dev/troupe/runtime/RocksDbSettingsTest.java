package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.storage.RocksDiskSettings;
import org.junit.jupiter.api.Test;

/**
 * {@code troupe.storage.rocksdb}: parsed into the storage settings, the block cache's 0 meaning
 * an automatic size, values out of range refused with the setting's name.
 */
class RocksDbSettingsTest {
  private static Config with(String settings) {
    return ConfigFactory.parseString(settings).withFallback(ConfigFactory.load());
  }

  private static RocksDiskSettings parsed(String settings) {
    return RuntimeSettings.fromConfig(with(settings)).storage().rocksDisk();
  }

  @Test
  void defaultsReachTheStorageSettings() {
    RocksDiskSettings defaults = RuntimeSettings.fromConfig(ConfigFactory.load()).storage()
        .rocksDisk();
    assertEquals(RocksDiskSettings.DEFAULT_BLOOM_BITS_PER_KEY, defaults.bloomBitsPerKey());
    assertEquals(RocksDiskSettings.DEFAULT_BLOOM_PREFIX_BYTES, defaults.bloomPrefixBytes());
    assertFalse(defaults.cacheIndexAndFilterBlocks());
    assertEquals(RocksDiskSettings.DEFAULT_JOURNAL_BLOB_MIN_BYTES, defaults.journalBlobMinBytes());
    assertTrue(defaults.journalBlobFiles());
    // 0: automatic, an eighth of the machine's memory and at least 64 MB.
    assertTrue(defaults.blockCacheBytes() >= 64L << 20, "block cache " + defaults.blockCacheBytes());
    assertEquals(RocksDiskSettings.defaults(), defaults);
  }

  @Test
  void explicitValuesAreTaken() {
    RocksDiskSettings settings = parsed("troupe.storage.rocksdb {block-cache-bytes = 256M,"
        + " bloom-bits-per-key = 0, bloom-prefix-bytes = 16, cache-index-and-filter-blocks = on,"
        + " journal-blob-min-bytes = 1K}");
    assertEquals(256L << 20, settings.blockCacheBytes());
    assertEquals(0, settings.bloomBitsPerKey());
    assertFalse(settings.prefixFilters());
    assertEquals(16, settings.bloomPrefixBytes());
    assertTrue(settings.cacheIndexAndFilterBlocks());
    assertEquals(1024, settings.journalBlobMinBytes());
    assertFalse(parsed("troupe.storage.rocksdb.journal-blob-min-bytes = 0").journalBlobFiles());
  }

  @Test
  void theMaintenanceYieldIsParsedAndBounded() {
    assertEquals(20, RuntimeSettings.fromConfig(ConfigFactory.load()).storage()
        .maintenanceYieldMillis(), "reference.conf's default");
    assertEquals(0, RuntimeSettings.fromConfig(with("troupe.storage.maintenance-yield-millis = 0"))
        .storage().maintenanceYieldMillis());
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> RuntimeSettings.fromConfig(with("troupe.storage.maintenance-yield-millis = 1001")));
    assertTrue(refused.getMessage().contains("troupe.storage.maintenance-yield-millis"),
        refused.getMessage());
  }

  @Test
  void theMaintenanceSlicesTimeBoundIsParsedAndBounded() {
    assertEquals(5, RuntimeSettings.fromConfig(ConfigFactory.load()).storage()
        .maintenanceSliceMaxMillis(), "reference.conf's default");
    assertEquals(0, RuntimeSettings.fromConfig(
        with("troupe.storage.maintenance-slice-max-millis = 0")).storage()
        .maintenanceSliceMaxMillis());
    for (String bad : new String[] {"-1", "1001"}) {
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
          () -> RuntimeSettings.fromConfig(
              with("troupe.storage.maintenance-slice-max-millis = " + bad)));
      assertTrue(refused.getMessage().contains("troupe.storage.maintenance-slice-max-millis"),
          refused.getMessage());
    }
  }

  @Test
  void valuesOutOfRangeAreRefusedByName() {
    for (String bad : new String[] {"block-cache-bytes = -1", "bloom-bits-per-key = -1",
        "bloom-bits-per-key = 65", "bloom-prefix-bytes = 2", "bloom-prefix-bytes = 1025",
        "journal-blob-min-bytes = -1", "journal-blob-min-bytes = 65M",
        "journal-blob-min-bytes = lots"}) {
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
          () -> parsed("troupe.storage.rocksdb." + bad));
      String setting = bad.substring(0, bad.indexOf(' '));
      assertTrue(refused.getMessage().contains("troupe.storage.rocksdb." + setting),
          refused.getMessage());
    }
  }
}
