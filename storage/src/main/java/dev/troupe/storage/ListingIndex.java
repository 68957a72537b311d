package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The listing index (column {@link KeyValueDisk.Column#LISTING}): one empty-valued key per entity
 * ever written, {@code UTF-8 type, 0x00, UTF-8 id} ({@link EntityId#toBytes}), so that bytewise key
 * order is (type, id) order and one type's entities are one contiguous key range: a page of a type
 * from a cursor is one bounded range read, never a scan of other types or of the journal
 * (docs/ARCHITECTURE.md, "Listing entities").
 *
 * <p>Why the order holds: names never contain a control character ({@link EntityId}), so no key of
 * type {@code T} is a prefix of another's and every key of {@code T} lies in {@code [T 0x00, T
 * 0x01)}; within it, ids compare by their UTF-8 bytes, which is code point order.
 *
 * <p>Invariant: every entity with a journal record, an index entry or a checkpoint has its listing
 * key. The partition writer puts the key in the same batch as the commit's journal record and index
 * entries (so a crash keeps both or neither), bootstrap installation in the batch of the installed
 * checkpoint, and a store created before the listing index existed gets it built once at open from
 * the entities it stores ({@link #buildIfAbsent}). A key is never deleted: a deleted entity keeps
 * it, so a listing as of an earlier version still finds it, and whether an entity exists at a
 * version is decided by reading it, never by the key (the listing is a superset; the readers filter
 * it). The built marker is in meta ({@link #META_BUILT}).
 */
final class ListingIndex {
  /** meta: the listing index is complete ({@link Keys#META_LISTING_BUILT}). */
  static final byte[] META_BUILT = Keys.META_LISTING_BUILT;

  /** The listing key format written here; a store marked with another is refused, not misread. */
  static final long FORMAT = 1;

  private ListingIndex() {}

  /** The listing key of {@code entity}. */
  static byte[] key(EntityId entity) {
    return entity.toBytes();
  }

  /** The first key of type {@code type}: its name and the zero byte. */
  static byte[] typeStart(String type) {
    byte[] name = type.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return Arrays.copyOf(name, name.length + 1);
  }

  /** Above every key of {@code type} and below every other type's that sorts after it. */
  static byte[] typeEnd(String type) {
    byte[] end = typeStart(type);
    end[end.length - 1] = 1;
    return end;
  }

  /**
   * Where a page continuing after the entity {@code afterId} of {@code type} starts: the smallest
   * key greater than that entity's (its key and a zero byte, which no id contains).
   */
  static byte[] after(String type, String afterId) {
    byte[] key = key(new EntityId(type, afterId));
    return Arrays.copyOf(key, key.length + 1);
  }

  /**
   * The ids of {@code type} in the index from {@code startId} (included with {@code
   * includeStart}, else only ids after it; null: from the first), in id order, at most {@code
   * limit}: one bounded range read at one consistent point of the disk.
   */
  static List<EntityId> page(KeyValueDisk disk, String type, String startId,
      boolean includeStart, int limit) {
    Invariants.check(limit > 0, "a listing page holds at least one entity, asked for %d", limit);
    byte[] lower = startId == null ? typeStart(type)
        : includeStart ? key(new EntityId(type, startId)) : after(type, startId);
    List<EntityId> found = new ArrayList<>(Math.min(limit, 1024));
    try (KeyValueDisk.Cursor cursor =
        disk.cursor(KeyValueDisk.Column.LISTING, null, lower, typeEnd(type))) {
      for (cursor.seek(lower); found.size() < limit && cursor.isValid(); cursor.next()) {
        EntityId entity = EntityId.fromBytes(cursor.key());
        Invariants.check(entity.type().equals(type),
            "listing key of type %s within the range of type %s", entity.type(), type);
        found.add(entity);
      }
    }
    return found;
  }

  /** Puts {@code entity}'s listing key into {@code batch} (idempotent: the value is empty). */
  static void put(KeyValueDisk.Batch batch, EntityId entity) throws DiskException {
    batch.put(KeyValueDisk.Column.LISTING, key(entity), Keys.EMPTY);
  }

  /** Puts the built marker into {@code batch}: a store created with the listing index. */
  static void markBuilt(KeyValueDisk.Batch batch) throws DiskException {
    batch.put(KeyValueDisk.Column.META, META_BUILT,
        Codec.encodePosition(new JournalPosition(FORMAT, 0)));
  }

  /**
   * Whether the index is complete; refuses a marker of another format (a newer Troupe's), which
   * this version would misread.
   */
  static boolean built(KeyValueDisk disk) throws DiskException {
    byte[] marker = disk.get(KeyValueDisk.Column.META, META_BUILT);
    if (marker == null) {
      return false;
    }
    long format = Codec.decodePosition(marker).sequence();
    if (format != FORMAT) {
      throw new IllegalStateException("the store's listing index has format " + format
          + "; this version of Troupe reads format " + FORMAT);
    }
    return true;
  }

  /**
   * Builds the index of a store written before it existed, once, at open (before any writer of
   * this node runs): every entity the store holds records or checkpoints of ({@code entities}, the
   * enumeration by the index and checkpoint columns, one seek per entity) gets its key, in batches
   * of {@code batchEntities} (the store's {@code troupe.storage.group-commit-max-records}, the
   * most records one write batch carries: memory stays bounded whatever the store's size), and
   * the marker comes in a synced batch after the last. A
   * crash in between leaves no marker, so the next open builds again (the puts are idempotent).
   * Never a scan of the journal: the index and checkpoint columns name every entity that has one.
   *
   * <p>Nodes of several sharing a disk may build at the same time, or while another node, already
   * upgraded, commits: each of those commits puts its own keys, so the union is complete either
   * way. A node of an older version does not put keys: every node of a data centre must run a
   * version with the listing index before listings are complete (docs/OPERATIONS.md).
   *
   * @return how many entities were indexed (0 when the index was built already)
   */
  static long buildIfAbsent(KeyValueDisk disk, EntityPages entities, int batchEntities)
      throws DiskException {
    Invariants.check(batchEntities > 0, "a build batch holds at least one entity, was %d",
        batchEntities);
    if (built(disk)) {
      return 0;
    }
    long indexed = 0;
    EntityId after = null;
    while (true) {
      List<EntityId> page = entities.page(after, batchEntities);
      if (!page.isEmpty()) {
        try (KeyValueDisk.Batch batch = disk.newBatch()) {
          for (EntityId entity : page) {
            put(batch, entity);
          }
          disk.write(batch, false);
        }
        indexed += page.size();
        after = page.get(page.size() - 1);
      }
      if (page.size() < batchEntities) {
        break;
      }
    }
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      markBuilt(batch);
      // Synced: the marker and, the disk's prefix guarantee, every key put before it.
      disk.write(batch, true);
    }
    return indexed;
  }

  /** The store's enumeration of stored entities ({@link Store#entities}). */
  @FunctionalInterface
  interface EntityPages {
    List<EntityId> page(EntityId after, int limit);
  }
}
