package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.AssignReplicated;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.ForgetDependency;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RecordDependency;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Stamp;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The binary form of the model's values, shared by the journal ({@code storage}'s {@code Codec}:
 * records, checkpoints, prepared parts) and the messages between cores ({@code txn}'s wire
 * codec): operations, OR-set tags, dependency records, entity states and entity ids. Fields only:
 * each format adds its own framing (record type, revision, length, checksum).
 *
 * <p>Stable: stored journals hold these bytes, so a change here is a change of every format that
 * uses it (the storage tests pin them with fixed byte vectors). Set elements are stored by their
 * identity (compact JSON text, see {@link SetValue}) and the value is re-parsed from it, so a
 * decoded set has the same map keys as the encoded one.
 *
 * <p>Thread-safe (stateless).
 */
public final class ValueEncoding {
  private static final byte ASSIGN = 1;
  private static final byte DELETE_KEY = 2;
  private static final byte INCREMENT = 3;
  private static final byte ADD_ELEMENT = 4;
  private static final byte REMOVE_ELEMENT = 5;
  private static final byte DELETE_ENTITY = 6;
  private static final byte RECORD_DEPENDENCY = 7;
  private static final byte FORGET_DEPENDENCY = 8;
  private static final byte ASSIGN_REPLICATED = 9;
  private static final byte SEND_MESSAGE = 10;
  private static final byte DELETE_KEY_REPLICATED = 11;
  private static final byte DELETE_COUNTER = 12;
  private static final byte DELETE_SET = 13;
  private static final byte DELETE_ENTITY_REPLICATED = 14;
  private static final byte INCREMENT_REPLICATED = 15;
  /** {@link DeleteEntity} with its observed write counts (type 6 is one without, still read). */
  private static final byte DELETE_ENTITY_OBSERVED = 16;

  private static final byte REGISTER = 1;
  private static final byte COUNTER = 2;
  private static final byte SET = 3;
  private static final byte DEPENDENCIES = 4;
  // Not values: tombstones, written among a state's entries so that a state without tombstones
  // (every state before they existed, every checkpoint on disk) keeps exactly its old bytes.
  private static final byte TOMBSTONE = 5;
  private static final byte ENTITY_TOMBSTONE = 6;
  private static final byte DELETED_COUNTER = 7;
  private static final byte WRITE_COUNTS = 8;
  private static final byte DELETED_WRITE_COUNTS = 9;
  /** The kinds {@link EncodedStates} reads and writes in place. */
  static final byte REGISTER_KIND = REGISTER;
  static final byte WRITE_COUNTS_KIND = WRITE_COUNTS;

  private ValueEncoding() {}

  // ---------------------------------------------------------------- entity ids

  /** {@link EntityId#toBytes} with a length. */
  public static void writeEntity(BinaryWriter out, EntityId entity) {
    out.bytes(entity.toBytes());
  }

  public static EntityId readEntity(BinaryReader in) {
    return EntityId.fromBytes(in.bytes());
  }

  // ---------------------------------------------------------------- operations

  public static void writeOperation(BinaryWriter out, Operation operation) {
    switch (operation) {
      case Assign assign -> {
        out.type(ASSIGN);
        out.string(assign.key());
        out.json(assign.value());
      }
      case AssignReplicated assign -> {
        out.type(ASSIGN_REPLICATED);
        out.string(assign.key());
        out.json(assign.value());
        out.fixedLong(assign.timestamp());
        out.varInt(assign.originDc());
      }
      case DeleteKey delete -> {
        out.type(DELETE_KEY);
        out.string(delete.key());
      }
      case Increment increment -> {
        out.type(INCREMENT);
        out.string(increment.key());
        out.signedVarLong(increment.by());
      }
      case AddElement add -> {
        out.type(ADD_ELEMENT);
        out.string(add.key());
        out.json(add.element());
        writeTag(out, add.tag());
      }
      case RemoveElement remove -> {
        out.type(REMOVE_ELEMENT);
        out.string(remove.key());
        out.json(remove.element());
        writeTags(out, remove.observedTags());
      }
      case DeleteEntity delete -> {
        if (delete.observedWrites() == null) {
          out.type(DELETE_ENTITY);
        } else {
          out.type(DELETE_ENTITY_OBSERVED);
          writeCounterMap(out, delete.observedWrites());
        }
      }
      case Operation.DeleteKeyReplicated delete -> {
        out.type(DELETE_KEY_REPLICATED);
        out.string(delete.key());
        out.fixedLong(delete.timestamp());
        out.varInt(delete.originDc());
      }
      case Operation.DeleteCounter delete -> {
        out.type(DELETE_COUNTER);
        out.string(delete.key());
        writeCounterMap(out, delete.observed().increments());
        writeCounterMap(out, delete.observed().decrements());
      }
      case Operation.DeleteSet delete -> {
        out.type(DELETE_SET);
        out.string(delete.key());
        writeTags(out, delete.observedTags());
      }
      case Operation.IncrementReplicated increment -> {
        out.type(INCREMENT_REPLICATED);
        out.string(increment.key());
        out.signedVarLong(increment.by());
        out.varInt(increment.originDc());
      }
      case Operation.DeleteEntityReplicated delete -> {
        out.type(DELETE_ENTITY_REPLICATED);
        out.fixedLong(delete.timestamp());
        out.varInt(delete.originDc());
        out.flag(delete.observedWrites() != null);
        if (delete.observedWrites() != null) {
          writeCounterMap(out, delete.observedWrites());
        }
      }
      case RecordDependency record -> {
        out.type(RECORD_DEPENDENCY);
        out.string(record.key());
        writeDependencyRecord(out, record.dependency(), record.contribution());
      }
      case ForgetDependency forget -> {
        out.type(FORGET_DEPENDENCY);
        out.string(forget.key());
        out.string(forget.dependencyId());
      }
      case Operation.SendMessage message -> {
        out.type(SEND_MESSAGE);
        writeEntity(out, message.receiver());
        out.string(message.action());
        out.json(message.args());
      }
    }
  }

  public static Operation readOperation(BinaryReader in) {
    byte type = in.type();
    return switch (type) {
      case ASSIGN -> new Assign(keyName(in), in.json());
      case ASSIGN_REPLICATED ->
          new AssignReplicated(keyName(in), in.json(), in.fixedLong(), in.varInt());
      case DELETE_KEY -> new DeleteKey(keyName(in));
      case INCREMENT -> new Increment(keyName(in), in.signedVarLong());
      case ADD_ELEMENT -> new AddElement(keyName(in), in.json(), readTag(in));
      case REMOVE_ELEMENT -> {
        String key = keyName(in);
        JsonNode element = in.json();
        int count = in.count();
        Set<Tag> tags = new HashSet<>();
        for (int i = 0; i < count; i++) {
          tags.add(readTag(in));
        }
        yield new RemoveElement(key, element, tags);
      }
      case DELETE_ENTITY -> new DeleteEntity();
      case DELETE_KEY_REPLICATED ->
          new Operation.DeleteKeyReplicated(keyName(in), in.fixedLong(), in.varInt());
      case DELETE_COUNTER -> new Operation.DeleteCounter(keyName(in),
          new CounterValue(readCounterMap(in), readCounterMap(in)));
      case DELETE_SET -> new Operation.DeleteSet(keyName(in), readTags(in));
      case INCREMENT_REPLICATED ->
          new Operation.IncrementReplicated(keyName(in), in.signedVarLong(), in.varInt());
      case DELETE_ENTITY_OBSERVED -> new DeleteEntity(readCounterMap(in));
      case DELETE_ENTITY_REPLICATED -> new Operation.DeleteEntityReplicated(in.fixedLong(),
          in.varInt(), in.flag() ? readCounterMap(in) : null);
      case RECORD_DEPENDENCY -> {
        String key = in.string();
        DependencyTable.Entry entry = readDependencyRecord(in);
        yield new RecordDependency(key, entry.dependency(), entry.contribution());
      }
      case FORGET_DEPENDENCY -> new ForgetDependency(in.string(), in.string());
      case SEND_MESSAGE -> new Operation.SendMessage(readEntity(in), in.string(), in.json());
      default -> throw in.corrupt("unknown operation type " + type, null);
    };
  }

  /**
   * Passes over one operation written by {@link #writeOperation} without building it: the same
   * fields as {@link #readOperation} reads, in the same order, their contents unchecked (strings,
   * JSON and dependencies are skipped by their sizes). For a reader that needs only what follows
   * the operations (issue 20: the replication log's decision entry reads whether a prepared record
   * holds operations or turns to redo). {@code OperationFormatTest} checks that it ends where
   * {@link #readOperation} ends for every operation type.
   */
  public static void skipOperation(BinaryReader in) {
    byte type = in.type();
    switch (type) {
      case ASSIGN -> {
        in.skipBytes();
        in.skipBytes();
      }
      case ASSIGN_REPLICATED -> {
        in.skipBytes();
        in.skipBytes();
        in.fixedLong();
        in.varInt();
      }
      case DELETE_KEY -> in.skipBytes();
      case INCREMENT -> {
        in.skipBytes();
        in.varLong();
      }
      case ADD_ELEMENT -> {
        in.skipBytes();
        in.skipBytes();
        readTag(in);
      }
      case REMOVE_ELEMENT -> {
        in.skipBytes();
        in.skipBytes();
        skipTags(in);
      }
      case DELETE_ENTITY -> {}
      case DELETE_KEY_REPLICATED -> {
        in.skipBytes();
        in.fixedLong();
        in.varInt();
      }
      case DELETE_COUNTER -> {
        in.skipBytes();
        skipCounterMap(in);
        skipCounterMap(in);
      }
      case DELETE_SET -> {
        in.skipBytes();
        skipTags(in);
      }
      case INCREMENT_REPLICATED -> {
        in.skipBytes();
        in.varLong();
        in.varInt();
      }
      case DELETE_ENTITY_OBSERVED -> skipCounterMap(in);
      case DELETE_ENTITY_REPLICATED -> {
        in.fixedLong();
        in.varInt();
        if (in.flag()) {
          skipCounterMap(in);
        }
      }
      case RECORD_DEPENDENCY -> {
        in.skipBytes(); // the key
        in.varInt(); // the dependency's revision (checked when it is read)
        in.skipBytes(); // its JSON
        byte present = in.type();
        if (present != 0 && present != 1) {
          throw in.corrupt("bad contribution flag " + present, null);
        }
        if (present == 1) {
          in.skipBytes();
        }
      }
      case FORGET_DEPENDENCY -> {
        in.skipBytes();
        in.skipBytes();
      }
      case SEND_MESSAGE -> {
        in.skipBytes();
        in.skipBytes();
        in.skipBytes();
      }
      default -> throw in.corrupt("unknown operation type " + type, null);
    }
  }

  private static void skipTags(BinaryReader in) {
    int count = in.count();
    for (int i = 0; i < count; i++) {
      readTag(in);
    }
  }

  private static void skipCounterMap(BinaryReader in) {
    int count = in.count();
    for (int i = 0; i < count; i++) {
      in.varInt();
      in.varLong();
    }
  }

  /**
   * A key's name, shared with every other operation and state naming the same key (issue 20,
   * memory): a state materialized from the journal or a checkpoint otherwise holds its own copy of
   * each key's name, ~48 bytes a key, about an eighth of a cached 1 KB record
   * (docs/BENCHMARKS.md, "bytes per cached record"). The JVM's string table holds names weakly,
   * so what it keeps is bounded by the states and operations alive.
   */
  private static String keyName(BinaryReader in) {
    return in.string().intern();
  }

  // ---------------------------------------------------------------- tags and dependencies

  public static void writeTag(BinaryWriter out, Tag tag) {
    out.varInt(tag.originDc());
    out.fixedLong(tag.transactionId());
    out.varInt(tag.index());
  }

  public static Tag readTag(BinaryReader in) {
    return new Tag(in.varInt(), in.fixedLong(), in.varInt());
  }

  /** A varint count, then each tag (in a canonical order, so equal sets have equal bytes). */
  /**
   * Tags in one order everywhere: they are kept in immutable sets whose iteration order changes
   * from one JVM to the next, and a state or operation must encode to the same bytes everywhere.
   */
  private static void writeTags(BinaryWriter out, java.util.Collection<Tag> tags) {
    out.varInt(tags.size());
    tags.stream()
        .sorted(java.util.Comparator.comparingInt(Tag::originDc)
            .thenComparingLong(Tag::transactionId).thenComparingInt(Tag::index))
        .forEach(tag -> writeTag(out, tag));
  }

  private static Set<Tag> readTags(BinaryReader in) {
    int count = in.count();
    Set<Tag> tags = new HashSet<>();
    for (int i = 0; i < count; i++) {
      tags.add(readTag(in));
    }
    return tags;
  }

  /** A dependency: its format revision, then its JSON form ({@link Dependency#toJson}). */
  public static void writeDependency(BinaryWriter out, Dependency dependency) {
    out.varInt(Dependency.FORMAT_REVISION);
    out.bytes(StoredDependencyJson.write(dependency)); // the same bytes as out.json(toJson())
  }

  public static Dependency readDependency(BinaryReader in) {
    int revision = in.varInt();
    if (revision != Dependency.FORMAT_REVISION) {
      throw in.corrupt("unknown dependency record revision " + revision, null);
    }
    return StoredDependencyJson.read(in.bytes(), in::parse); // as Dependency.fromJson(in.json())
  }

  /**
   * A dependency record: the dependency ({@link #writeDependency}) and the follower's recorded
   * contribution (a presence byte, then the JSON value).
   */
  public static void writeDependencyRecord(BinaryWriter out, Dependency dependency,
      JsonNode contribution) {
    writeDependency(out, dependency);
    out.optionalJson(contribution);
  }

  public static DependencyTable.Entry readDependencyRecord(BinaryReader in) {
    Dependency dependency = readDependency(in);
    byte present = in.type();
    if (present != 0 && present != 1) {
      throw in.corrupt("bad contribution flag " + present, null);
    }
    return new DependencyTable.Entry(dependency, present == 1 ? in.json() : null);
  }

  // ---------------------------------------------------------------- entity states

  /**
   * {@code version u64, exists byte, count, (key, kind byte, value)*}. The entries include the
   * state's tombstones (docs/ARCHITECTURE.md, "Deletes across data centres"): a key's as kind 5
   * ({@code timestamp u64, origin DC varint}), the entity's as kind 6 under the empty key (no key
   * is empty), a deleted counter's removed sums as kind 7 (a counter's fields), the entity's write
   * counts and deleted write counts as kinds 8 and 9 under the empty key (a map of DC to count). A state without tombstones has the bytes it had before they existed, so every
   * stored checkpoint reads as it did.
   */
  public static void writeState(BinaryWriter out, EntityState state) {
    out.fixedLong(state.version());
    out.flag(state.exists());
    out.varInt(state.values().size() + state.tombstones().size()
        + (state.entityTombstone() == null ? 0 : 1) + state.deletedCounters().size()
        + (state.writeCounts().isEmpty() ? 0 : 1) + (state.deletedWriteCounts().isEmpty() ? 0 : 1));
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      out.string(entry.getKey());
      writeValue(out, entry.getValue());
    }
    for (Map.Entry<String, Stamp> tombstone : state.tombstones().entrySet()) {
      out.string(tombstone.getKey());
      out.type(TOMBSTONE);
      out.fixedLong(tombstone.getValue().timestamp());
      out.varInt(tombstone.getValue().originDc());
    }
    for (Map.Entry<String, CounterValue> deleted : state.deletedCounters().entrySet()) {
      out.string(deleted.getKey());
      out.type(DELETED_COUNTER);
      writeCounterMap(out, deleted.getValue().increments());
      writeCounterMap(out, deleted.getValue().decrements());
    }
    if (!state.writeCounts().isEmpty()) {
      out.string("");
      out.type(WRITE_COUNTS);
      writeCounterMap(out, state.writeCounts());
    }
    if (!state.deletedWriteCounts().isEmpty()) {
      out.string("");
      out.type(DELETED_WRITE_COUNTS);
      writeCounterMap(out, state.deletedWriteCounts());
    }
    if (state.entityTombstone() != null) {
      out.string("");
      out.type(ENTITY_TOMBSTONE);
      out.fixedLong(state.entityTombstone().timestamp());
      out.varInt(state.entityTombstone().originDc());
    }
  }

  public static EntityState readState(BinaryReader in) {
    long version = in.fixedLong();
    byte existsFlag = in.type();
    if (existsFlag != 0 && existsFlag != 1) {
      throw in.corrupt("bad exists flag " + existsFlag, null);
    }
    int count = in.count();
    Map<String, Value> values = new HashMap<>();
    Map<String, Stamp> tombstones = new HashMap<>();
    Stamp entityTombstone = null;
    Map<String, CounterValue> deletedCounters = new HashMap<>();
    Map<Integer, Long> writeCounts = Map.of();
    Map<Integer, Long> deletedWriteCounts = Map.of();
    for (int i = 0; i < count; i++) {
      String key = keyName(in);
      byte kind = in.peekType();
      if (kind == TOMBSTONE) {
        in.type();
        tombstones.put(key, new Stamp(in.fixedLong(), in.varInt()));
      } else if (kind == ENTITY_TOMBSTONE) {
        in.type();
        entityTombstone = new Stamp(in.fixedLong(), in.varInt());
      } else if (kind == WRITE_COUNTS) {
        in.type();
        writeCounts = readCounterMap(in);
      } else if (kind == DELETED_WRITE_COUNTS) {
        in.type();
        deletedWriteCounts = readCounterMap(in);
      } else if (kind == DELETED_COUNTER) {
        in.type();
        deletedCounters.put(key, new CounterValue(readCounterMap(in), readCounterMap(in)));
      } else {
        values.put(key, readValue(in));
      }
    }
    return new EntityState(values, version, existsFlag == 1, tombstones, entityTombstone,
        deletedCounters, writeCounts, deletedWriteCounts);
  }

  /** One key's value: a kind byte, then its fields. */
  public static void writeValue(BinaryWriter out, Value value) {
    switch (value) {
      case RegisterValue register -> {
        out.type(REGISTER);
        out.json(register.value());
        out.fixedLong(register.timestamp());
        out.varInt(register.originDc());
      }
      case CounterValue counter -> {
        out.type(COUNTER);
        writeCounterMap(out, counter.increments());
        writeCounterMap(out, counter.decrements());
      }
      case SetValue set -> {
        out.type(SET);
        out.varInt(set.elements().size());
        for (Map.Entry<String, SetValue.Element> element
            : new java.util.TreeMap<>(set.elements()).entrySet()) {
          out.string(element.getKey());
          writeTags(out, element.getValue().tags());
        }
      }
      case DependencyTable table -> {
        out.type(DEPENDENCIES);
        out.varInt(table.size());
        for (DependencyTable.Entry record : table.all()) {
          writeDependencyRecord(out, record.dependency(), record.contribution());
        }
      }
    }
  }

  public static Value readValue(BinaryReader in) {
    byte kind = in.type();
    return switch (kind) {
      case REGISTER -> new RegisterValue(in.json(), in.fixedLong(), in.varInt());
      case COUNTER -> new CounterValue(readCounterMap(in), readCounterMap(in));
      case SET -> {
        int elementCount = in.count();
        Map<String, SetValue.Element> elements = new HashMap<>();
        for (int e = 0; e < elementCount; e++) {
          String identity = in.string();
          int tagCount = in.count();
          Set<Tag> tags = new HashSet<>();
          for (int t = 0; t < tagCount; t++) {
            tags.add(readTag(in));
          }
          JsonNode element = in.parse(identity.getBytes(StandardCharsets.UTF_8));
          elements.put(identity, new SetValue.Element(element, tags));
        }
        yield new SetValue(elements);
      }
      case DEPENDENCIES -> {
        int entryCount = in.count();
        DependencyTable table = DependencyTable.EMPTY;
        for (int e = 0; e < entryCount; e++) {
          DependencyTable.Entry entry = readDependencyRecord(in);
          table = table.with(entry.dependency(), entry.contribution());
        }
        yield table;
      }
      default -> throw in.corrupt("unknown value kind " + kind, null);
    };
  }

  private static void writeCounterMap(BinaryWriter out, Map<Integer, Long> map) {
    out.varInt(map.size());
    // In DC order: the maps are immutable copies whose iteration order changes from one JVM to
    // the next, and a state must encode to the same bytes everywhere (pinned vectors, checks).
    for (Map.Entry<Integer, Long> entry : new java.util.TreeMap<>(map).entrySet()) {
      out.varInt(entry.getKey());
      out.signedVarLong(entry.getValue());
    }
  }

  private static Map<Integer, Long> readCounterMap(BinaryReader in) {
    int count = in.count();
    Map<Integer, Long> map = new HashMap<>();
    for (int i = 0; i < count; i++) {
      map.put(in.varInt(), in.signedVarLong());
    }
    return map;
  }
}
