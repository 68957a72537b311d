package dev.troupe.model.causal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import dev.troupe.model.value.Tag;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Each replication record pinned byte for byte at its current version: stored logs and DCs of
 * different builds read these bytes, so a change that alters them must come with a new version
 * (and a reader for the old one), and fails here until it does.
 */
class ReplicationCodecTest {
  private static final HexFormat HEX = HexFormat.of();
  private static final EntityId CART = new EntityId("Cart", "c1");
  private static final EntityId PRODUCT = new EntityId("Product", "p1");
  private static final DependencyVector DEPENDENCIES =
      DependencyVector.of(Map.of(7, 1_700_000_000_123L, 300, 5L));

  static final ReplicationEntry.Part PART = new ReplicationEntry.Part(42, 1_700_000_000_500L,
      99L, 1, CART, List.of(
          new Operation.Assign("name", Json.parse("{\"first\":\"Ann\"}")),
          new Operation.Increment("count", -3),
          new Operation.AddElement("tags", Json.parse("\"red\""), new Tag(42, 99L, 0)),
          new Operation.RemoveElement("tags", Json.parse("\"blue\""), Set.of(new Tag(7, 5L, 2))),
          new Operation.DeleteKey("old"),
          new Operation.DeleteEntity()),
      DEPENDENCIES);

  static final ReplicationEntry.Decision DECISION = new ReplicationEntry.Decision(42,
      1_700_000_000_400L, 99L, 0, List.of(CART, PRODUCT), DEPENDENCIES);

  static final ReplicationBatch BATCH =
      new ReplicationBatch(42, List.of(DECISION, PART), 1_700_000_000_600L);

  static final ReplicationBatch HEARTBEAT = new ReplicationBatch(42, List.of(), 1_700_000_000_900L);

  private static final String PART_HEX = "0101000000782a0000018bcfe569f400000000000000630107436172740063310601046e616d650f7b226669727374223a22416e6e227d0305636f756e74050404746167730522726564222a0000000000000063000504746167730622626c756522010700000000000000050202036f6c64060207fbd095ffbc31ac020504b8cb27";
  private static final String DECISION_HEX = "0201000000312a0000018bcfe569900000000000000063000207436172740063310a50726f647563740070310207fbd095ffbc31ac02050d3c725e";
  private static final String BATCH_HEX = "0301000000b52a0000018bcfe56a5802022a0000018bcfe569900000000000000063000207436172740063310a50726f647563740070310207fbd095ffbc31ac0205012a0000018bcfe569f400000000000000630107436172740063310601046e616d650f7b226669727374223a22416e6e227d0305636f756e74050404746167730522726564222a0000000000000063000504746167730622626c756522010700000000000000050202036f6c64060207fbd095ffbc31ac02055783326e";
  private static final String HEARTBEAT_HEX = "03010000000a2a0000018bcfe56b8400a72abe61";

  @Test
  void aPartHasItsFixedBytes() {
    assertEquals(PART_HEX, HEX.formatHex(ReplicationCodec.encodeEntry(PART)));
    assertEquals(PART, ReplicationCodec.decodeEntry(HEX.parseHex(PART_HEX)));
  }

  @Test
  void aDecisionHasItsFixedBytes() {
    assertEquals(DECISION_HEX, HEX.formatHex(ReplicationCodec.encodeEntry(DECISION)));
    assertEquals(DECISION, ReplicationCodec.decodeEntry(HEX.parseHex(DECISION_HEX)));
  }

  @Test
  void aBatchHasItsFixedBytes() {
    assertEquals(BATCH_HEX, HEX.formatHex(ReplicationCodec.encodeBatch(BATCH)));
    assertEquals(BATCH, ReplicationCodec.decodeBatch(HEX.parseHex(BATCH_HEX)));
  }

  @Test
  void aHeartbeatHasItsFixedBytes() {
    assertEquals(HEARTBEAT_HEX, HEX.formatHex(ReplicationCodec.encodeBatch(HEARTBEAT)));
    assertEquals(HEARTBEAT, ReplicationCodec.decodeBatch(HEX.parseHex(HEARTBEAT_HEX)));
  }

  @Test
  void framesShorterThanTheSmallestAreRefused() {
    assertEquals(Damage.TOO_SHORT, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(new byte[9])).damage());
    assertEquals(Damage.TOO_SHORT, assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeBatch(null)).damage());
  }

  @Test
  void aBatchWithAnEntryOfAnotherOriginIsRefused() {
    // The batch's origin field (byte 6, varint 42) rewritten to 43, checksum made valid again.
    byte[] bytes = HEX.parseHex(BATCH_HEX);
    bytes[6] = 43;
    CorruptFrameException refused = assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeBatch(ReplicationCodecProperties.resealed(bytes)));
    assertEquals(Damage.MALFORMED, refused.damage());
  }

  @Test
  void aDependencyVectorOutOfOrderIsRefused() {
    // The decision's vector (DC 7, DC 300) with its second DC rewritten as 5 (a one-byte varint
    // instead of two), so the entries are out of order; length and checksum made valid again.
    byte[] bytes = HEX.parseHex(DECISION_HEX);
    int at = DECISION_HEX.indexOf("ac02") / 2; // DC 300 as a varint
    bytes[at] = 5;
    bytes[at + 1] = 5; // DC 5 (below 7), timestamp 5
    byte[] shorter = new byte[bytes.length - 1];
    System.arraycopy(bytes, 0, shorter, 0, at + 2);
    System.arraycopy(bytes, at + 3, shorter, at + 2, bytes.length - at - 3);
    shorter[5] = (byte) (shorter[5] - 1);
    CorruptFrameException refused = assertThrows(CorruptFrameException.class,
        () -> ReplicationCodec.decodeEntry(ReplicationCodecProperties.resealed(shorter)));
    assertEquals(Damage.MALFORMED, refused.damage());
  }
}
