package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Key encodings sort numerically, and entity placement is a fixed function of the bytes. */
class KeysTest {

  @Test
  void murmurMatchesTheReferenceVectors() {
    assertEquals(0, Keys.murmur3(new byte[0], 0));
    assertEquals(0x248bfa47, Keys.murmur3("hello".getBytes(StandardCharsets.UTF_8), 0));
    assertEquals(
        0x2e4ff723,
        Keys.murmur3(
            "The quick brown fox jumps over the lazy dog".getBytes(StandardCharsets.UTF_8), 0));
  }

  @Test
  void placementIsStable() {
    // Golden values: if they change, every entity of an existing database moves partition.
    int[] expected = {2, 1, 2, 3, 0, 2, 2, 0};
    for (int i = 0; i < expected.length; i++) {
      assertEquals(expected[i], Keys.partitionOf(new EntityId("Item", "item-" + i), 4), "item-" + i);
    }
  }

  @Test
  void everyKindOfMetaRecordHasItsOwnFirstByte() {
    java.util.Set<Byte> seen = new java.util.HashSet<>();
    for (byte tag : Keys.META_TAGS) {
      assertTrue(seen.add(tag), "meta tag '" + (char) tag + "' is used twice");
    }
    for (byte[] key : java.util.List.of(Keys.META_PARTITIONS, Keys.META_CLOCK_CEILING,
        Keys.META_DELIVERED, Keys.META_PEERS, Keys.META_RECEIVED_ENTRIES,
        Keys.META_TRUNCATED_ENTRIES, Keys.META_BOOTSTRAP, Keys.META_LISTING_BUILT,
        Keys.metaClockCeiling(3), Keys.metaLastRound(1), Keys.metaHorizon(1), Keys.metaRound(1, 7),
        Keys.metaLoggedEntries(1), Keys.metaLoggedDecision(5),
        Keys.metaVectorEntry(Keys.META_APPLIED, 2), Keys.metaVectorEntry(Keys.META_RECEIVED, 2),
        Keys.metaVectorEntry(Keys.META_TRUNCATED, 2),
        Keys.metaVectorEntry(Keys.META_DELIVERED_REMOTE, 2))) {
      assertTrue(seen.contains(key[0]), "meta key of tag '" + (char) key[0] + "' not in META_TAGS");
    }
  }

  @Test
  void keysSortInNumericOrder() {
    assertTrue(Arrays.compareUnsigned(Keys.journal(1, 255), Keys.journal(1, 256)) < 0);
    assertTrue(Arrays.compareUnsigned(Keys.journal(1, Long.MAX_VALUE), Keys.journal(2, 0)) < 0);
    byte[] prefix = Keys.entityPrefix(new EntityId("Item", "a"));
    assertTrue(
        Arrays.compareUnsigned(Keys.index(prefix, 1L << 40, 0, 9), Keys.index(prefix, (1L << 40) + 1, 0, 0))
            < 0);
    assertTrue(Arrays.compareUnsigned(Keys.checkpoint(prefix, 127), Keys.checkpoint(prefix, 128)) < 0);
    assertEquals(12345L, Keys.checkpointTimestamp(Keys.checkpoint(prefix, 12345)));
    assertEquals(7L, Keys.journalSequence(Keys.journal(3, 7)));
    assertEquals(3, Keys.journalPartition(Keys.journal(3, 7)));
    // The length in the prefix keeps "Item/a" apart from "Item/ab".
    byte[] longer = Keys.entityPrefix(new EntityId("Item", "ab"));
    assertTrue(!Keys.hasPrefix(Keys.checkpoint(longer, 1), prefix, 8));
  }
}
