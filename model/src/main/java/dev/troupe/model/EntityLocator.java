package dev.troupe.model;

/**
 * Where an entity lives: entity → partition → node. The port every component that routes a message
 * to an entity, or stores an entity, asks; implemented by {@link SingleNodeLocator} on one node and
 * by a cluster's placement elsewhere (the multi-node simulator's hash placement). A data centre of
 * several nodes on one shared store (issue 18) keeps {@link #partitionOf} a pure function, but
 * its partitions move between nodes: there Pekko Cluster Sharding (the runtime) or the simulated
 * sharding (the simulator's shared-store mode) decides which node hosts a partition now, and
 * {@link #nodeOf} is at most a node's current view of it.
 *
 * <p><b>Contract.</b>
 *
 * <ul>
 *   <li>{@link #partitionOf} is a pure function of the entity and the partition count: the same
 *       answer on every node, in every JVM, across restarts (placement is what the data on disk was
 *       written under: the store refuses to open with a different partition count). {@link
 *       #nodeOf} is too for a static placement (one node, the hash placement).
 *   <li>{@link #nodeOf} is the node hosting the entity (0..63, the node ids of {@link
 *       dev.troupe.model.time.TransactionIds}): messages for the entity go there, and its state is
 *       in that node's store.
 *   <li>{@link #partitionOf} is in {@code 0..partitions()-1}: the partition of the hosting node's
 *       store (journal, group-commit writer) and the entity registry the entity belongs to. A
 *       cluster placement may number partitions cluster-wide (a partition then moves between
 *       nodes whole) or per node; on one node it is {@link #partitionOf(EntityId, int)}.
 *   <li>Thread-safe and cheap: asked on every message.
 * </ul>
 */
public interface EntityLocator {
  /** The seed of {@link #placementHash}; fixed, part of the stored format. */
  int PLACEMENT_SEED = 0x5452_4f55;

  /** How many partitions there are. */
  int partitions();

  /** The partition {@code entity} belongs to, in {@code 0..partitions()-1}. */
  int partitionOf(EntityId entity);

  /** The node that hosts {@code entity} (the node of its partition). */
  int nodeOf(EntityId entity);

  /**
   * The stable hash placement starts from: MurmurHash3 (x86, 32 bit) of {@link EntityId#toBytes()}
   * with {@link #PLACEMENT_SEED}. A fixed function of the bytes, so placement is stable across runs
   * and JVMs; {@code floorMod(placementHash(entity), partitions)} is the partition every store ever
   * written used, so a locator must keep it.
   */
  static int placementHash(EntityId entity) {
    return murmur3(entity.toBytes(), PLACEMENT_SEED);
  }

  /** The partition of {@code entity} among {@code partitions} (the placement every store uses). */
  static int partitionOf(EntityId entity, int partitions) {
    return Math.floorMod(placementHash(entity), partitions);
  }

  /** MurmurHash3 x86 32-bit. */
  static int murmur3(byte[] data, int seed) {
    final int c1 = 0xcc9e2d51;
    final int c2 = 0x1b873593;
    int h = seed;
    int blocks = data.length / 4;
    for (int i = 0; i < blocks; i++) {
      int k =
          (data[4 * i] & 0xFF)
              | ((data[4 * i + 1] & 0xFF) << 8)
              | ((data[4 * i + 2] & 0xFF) << 16)
              | ((data[4 * i + 3] & 0xFF) << 24);
      k *= c1;
      k = Integer.rotateLeft(k, 15);
      k *= c2;
      h ^= k;
      h = Integer.rotateLeft(h, 13);
      h = h * 5 + 0xe6546b64;
    }
    int tail = blocks * 4;
    int k = 0;
    switch (data.length & 3) {
      case 3:
        k ^= (data[tail + 2] & 0xFF) << 16;
      // fall through
      case 2:
        k ^= (data[tail + 1] & 0xFF) << 8;
      // fall through
      case 1:
        k ^= data[tail] & 0xFF;
        k *= c1;
        k = Integer.rotateLeft(k, 15);
        k *= c2;
        h ^= k;
      // fall through
      default:
        break;
    }
    h ^= data.length;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }
}
