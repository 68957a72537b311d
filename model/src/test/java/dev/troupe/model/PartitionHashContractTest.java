package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The partition of an entity is a published contract (README, docs/ARCHITECTURE.md "Clients that
 * reach the owner", the OpenAPI document's {@code partitionCount}): a partition-aware client
 * computes it itself to send each request to the member hosting the entity, and every store ever
 * written was laid out by it. These vectors were checked against an independent MurmurHash3
 * (x86, 32-bit) implementation; a change here breaks every such client and every store.
 */
class PartitionHashContractTest {
  private static void assertPartition(String type, String id, int hash, int of12, int of64) {
    EntityId entity = new EntityId(type, id);
    assertEquals(hash, EntityLocator.placementHash(entity), type + "/" + id);
    assertEquals(of12, EntityLocator.partitionOf(entity, 12), type + "/" + id + " of 12");
    assertEquals(of64, EntityLocator.partitionOf(entity, 64), type + "/" + id + " of 64");
  }

  @Test
  void thePartitionHashKeepsItsValues() {
    assertPartition("usertable", "user1", 884_578_221, 9, 45);
    assertPartition("Account", "a-17", -103_333_506, 6, 62); // negative hash: floorMod
    assertPartition("Cart", "c1", 1_992_355_120, 4, 48);
    assertPartition("Ünïcode", "ключ", 1_744_953_664, 4, 0); // UTF-8 bytes, tail of 1 to 3
  }

  @Test
  void theHashIsMurmurThreeOfTypeZeroIdWithTheFixedSeed() {
    EntityId entity = new EntityId("Cart", "c1");
    byte[] bytes = "Cart\0c1".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(EntityLocator.murmur3(bytes, 0x5452_4F55), EntityLocator.placementHash(entity));
  }
}
