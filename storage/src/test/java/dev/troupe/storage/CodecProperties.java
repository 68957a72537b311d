package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.value.DependencyTable;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** Round trips of every persisted format, and detection of corruption. */
class CodecProperties {

  @Property(tries = 200)
  void recordsRoundTrip(@ForAll("records") TransactionRecord record) {
    byte[] encoded = Codec.encodeRecord(record);
    assertEquals(record, Codec.decodeRecord(encoded));
  }

  /**
   * A record's outline (what truncation and the recovery scan read) is its commit timestamp and
   * its writes' entities in order, as decoding it whole gives them (random records of the local
   * operations; that skipping ends where reading ends is checked for every operation type by
   * {@code OperationFormatTest}); and the outline refuses a damaged or torn copy as decoding does.
   */
  @Property(tries = 200)
  void aRecordsOutlineIsWhatDecodingItGives(@ForAll("records") TransactionRecord record,
      @ForAll long seed) {
    byte[] encoded = Codec.encodeRecord(record);
    Codec.RecordOutline outline = Codec.outlineRecord(encoded);
    assertEquals(record.commitTimestamp(), outline.commitTimestamp());
    assertEquals(record.writes().stream().map(EntityWrite::entity).toList(), outline.entities());
    java.util.Random random = new java.util.Random(seed);
    byte[] damaged = encoded.clone();
    damaged[random.nextInt(damaged.length)] ^= (byte) (1 + random.nextInt(255));
    assertThrows(CorruptDataException.class, () -> Codec.outlineRecord(damaged));
    byte[] torn = java.util.Arrays.copyOf(encoded, random.nextInt(encoded.length));
    assertThrows(CorruptDataException.class, () -> Codec.outlineRecord(torn));
  }

  @Property(tries = 200)
  void statesRoundTrip(@ForAll("states") EntityState state) {
    byte[] encoded = Codec.encodeState(state);
    assertEquals(state, Codec.decodeState(encoded));
  }

  /**
   * The object cache's encoded entry (issue 20, memory) decodes to its state, and a commit applied
   * to it gives (decoded) what applying to the decoded state gives, its decoded estimate
   * re-weighed by the touched keys alone equal to weighing the result whole; encoded again, it
   * weighs what a loaded entry of the same state weighs.
   */
  @Property(tries = 200)
  void aCachedStateAppliesAsItsDecodedState(@ForAll("states") EntityState state,
      @ForAll("operationLists") List<Operation> operations) {
    EntityId entity = new EntityId("Type", "id");
    CachedState cached = CachedState.of(entity, state);
    assertEquals(state, cached.state());
    assertEquals(state.version(), cached.version());
    assertEquals(state.exists(), cached.exists());
    assertEquals(state.values().values().stream().anyMatch(v -> v instanceof DependencyTable),
        cached.holdsDependencies());
    assertEquals(true, cached.weight() > Codec.encodeState(state).length);
    if (state.version() == Long.MAX_VALUE) {
      return;
    }
    EntityState expected;
    try {
      expected = state.apply(operations, state.version() + 1, 2);
    } catch (RuntimeException refused) {
      assertThrows(refused.getClass(),
          () -> cached.apply(entity, operations, state.version() + 1, 2));
      return;
    }
    CachedState next = cached.apply(entity, operations, state.version() + 1, 2);
    if (next.isEncoded()) {
      // Applied in place (a record assigning existing registers of a plain state): the bytes
      // the decoded way encodes, weighed as a loaded entry of that state.
      assertArrayEquals(Codec.encodeState(expected), next.encoded());
      assertEquals(CachedState.of(entity, expected).weight(), next.weight());
    }
    assertEquals(expected, next.state());
    assertEquals(expected.version(), next.version());
    assertEquals(expected.exists(), next.exists());
    CachedState whole = CachedState.of(entity, expected);
    assertEquals(whole.decodedWeight(), next.decodedWeight());
    assertEquals(whole.holdsDependencies(), next.holdsDependencies(),
        "told from the keys a commit touches as from the whole state");
    if (!next.isEncoded()) {
      assertEquals(next.decodedWeight(), next.weight(), "a decoded entry weighs its state");
    }
    CachedState compacted = next.encodedAs(entity, Codec.encodeState(expected));
    assertEquals(CachedState.heldEncoded(expected), compacted.isEncoded());
    assertEquals(expected, compacted.state());
    assertEquals(whole.weight(), compacted.weight());
    assertEquals(whole.decodedWeight(), compacted.decodedWeight());
  }

  /**
   * A record that only assigns registers a plain cached state holds (YCSB's updates) is applied
   * to the encoded entry in place: it stays encoded, with the bytes, state, weight and decoded
   * weight of the decoded way's result loaded anew.
   */
  @Property(tries = 100)
  void aRecordOfAssignmentsAppliesToAnEncodedEntryInPlace(@ForAll long seed) {
    java.util.Random random = new java.util.Random(seed);
    EntityId entity = new EntityId("usertable", "user" + random.nextInt(1000));
    List<Operation> insert = new java.util.ArrayList<>();
    int keys = 1 + random.nextInt(10);
    for (int i = 0; i < keys; i++) {
      insert.add(new Assign("field" + i, printable(random)));
    }
    EntityState state = EntityState.ABSENT.apply(insert, 1 + random.nextInt(100), 0);
    CachedState cached = CachedState.of(entity, state);
    for (int record = 0; record < 3; record++) {
      List<Operation> update = new java.util.ArrayList<>();
      for (int i = 0, count = 1 + random.nextInt(3); i < count; i++) {
        update.add(new Assign("field" + random.nextInt(keys), random.nextInt(5) == 0
            ? Json.NODES.numberNode((long) random.nextInt()) : printable(random)));
      }
      long timestamp = state.version() + 1 + random.nextInt(10);
      state = state.apply(update, timestamp, 0);
      cached = cached.apply(entity, update, timestamp, 0);
      assertEquals(true, cached.isEncoded(), "applied in place");
      assertArrayEquals(Codec.encodeState(state), cached.encoded());
      assertEquals(state, cached.state());
      CachedState loaded = CachedState.of(entity, state);
      assertEquals(loaded.weight(), cached.weight());
      assertEquals(loaded.decodedWeight(), cached.decodedWeight());
      assertEquals(timestamp, cached.version());
      assertEquals(true, cached.exists());
      assertEquals(false, cached.holdsDependencies());
    }
  }

  /** A string of 0 to 100 characters from 0x20 to 0x7F, as YCSB generates them. */
  private static JsonNode printable(java.util.Random random) {
    char[] chars = new char[random.nextInt(101)];
    for (int i = 0; i < chars.length; i++) {
      chars[i] = (char) (0x20 + random.nextInt(0x60));
    }
    return Json.NODES.textNode(new String(chars));
  }

  /**
   * A cache entry made from a checkpoint's bytes as read from disk (issue 20: a miss served from
   * its checkpoint's bytes) is exactly the entry made from the state they decode to, in every
   * field; for a plain state (registers of plain JSON under ASCII keys, write counts) it is made
   * without decoding: the outline reads it and the bytes are the encoder's own.
   */
  @Property(tries = 300)
  void anEntryFromACheckpointsBytesIsTheEntryOfItsDecodedState(@ForAll long seed) {
    java.util.Random random = new java.util.Random(seed);
    boolean plain = random.nextInt(3) > 0;
    EntityState state = checkpointedState(random, plain);
    EntityId entity = new EntityId("usertable", "user" + random.nextInt(100_000));
    byte[] bytes = Codec.encodeState(state);
    assertCheckpointEntry(entity, bytes);
    if (plain) {
      assertEquals(true, Codec.outlineState(bytes) != null, "a plain state is outlined");
    }
  }

  /** The same for states of every kind (mostly not plain: the decoding way). */
  @Property(tries = 200)
  void anEntryFromAnyCheckpointIsTheEntryOfItsDecodedState(@ForAll("states") EntityState state) {
    assertCheckpointEntry(new EntityId("Type", "id"), Codec.encodeState(state));
  }

  /**
   * Bytes that decode to a state the encoder writes otherwise (forms no writer of this format
   * writes, checksum intact) are decoded: the entry's bytes are the encoder's, as {@code of}
   * makes them, never the odd bytes.
   */
  @Example
  void aCheckpointNotInTheEncodersFormIsDecoded() {
    EntityId entity = new EntityId("Record", "r1");
    java.util.function.Function<java.util.function.Consumer<dev.troupe.model.codec.BinaryWriter>,
        byte[]> sealed = fields -> {
          dev.troupe.model.codec.BinaryWriter out = new dev.troupe.model.codec.BinaryWriter(64);
          out.type(Codec.ENTITY_STATE);
          out.type(Codec.FORMAT_REVISION);
          fields.accept(out);
          out.appendChecksum();
          return out.toByteArray();
        };
    // A register: key, kind 1, JSON, stamp, data centre.
    java.util.function.BiConsumer<dev.troupe.model.codec.BinaryWriter, String> register =
        (out, key) -> {
          out.string(key);
          out.type((byte) 1);
          out.bytes("\"v\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          out.fixedLong(3);
          out.varInt(0);
        };
    List<byte[]> odd = List.of(
        // The entry count as a two-byte varint (0x81 0x00).
        sealed.apply(out -> {
          out.fixedLong(5);
          out.flag(true);
          out.raw(new byte[] {(byte) 0x81, 0}, 0, 2);
          register.accept(out, "a");
        }),
        // Keys out of order.
        sealed.apply(out -> {
          out.fixedLong(5);
          out.flag(true);
          out.varInt(2);
          register.accept(out, "b");
          register.accept(out, "a");
        }),
        // Write counts not in data centre order, and an empty write counts map.
        sealed.apply(out -> {
          out.fixedLong(5);
          out.flag(true);
          out.varInt(2);
          register.accept(out, "a");
          out.string("");
          out.type((byte) 8);
          out.varInt(2);
          out.varInt(2);
          out.signedVarLong(1);
          out.varInt(1);
          out.signedVarLong(1);
        }),
        sealed.apply(out -> {
          out.fixedLong(5);
          out.flag(true);
          out.varInt(2);
          register.accept(out, "a");
          out.string("");
          out.type((byte) 8);
          out.varInt(0);
        }),
        // JSON Jackson writes otherwise: -0, a padded number, an escaped slash.
        sealed.apply(out -> {
          out.fixedLong(5);
          out.flag(true);
          out.varInt(3);
          for (String json : List.of("-0", "1E2", "\"a\\/b\"")) {
            out.string("k" + json.length());
            out.type((byte) 1);
            out.bytes(json.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.fixedLong(3);
            out.varInt(0);
          }
        }));
    for (byte[] bytes : odd) {
      assertEquals(null, Codec.outlineState(bytes), "not the encoder's form: not outlined");
      assertEquals(false, java.util.Arrays.equals(bytes,
          Codec.encodeState(Codec.decodeState(bytes))), "the encoder writes other bytes");
      assertCheckpointEntry(entity, bytes);
    }
  }

  /** A damaged checkpoint makes no entry: it throws as decoding it does. */
  @Property(tries = 200)
  void aFlippedByteInACheckpointMakesNoEntry(@ForAll long seed,
      @ForAll @IntRange(min = 0, max = 100_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    java.util.Random random = new java.util.Random(seed);
    byte[] bytes = Codec.encodeState(checkpointedState(random, true));
    bytes[where % bytes.length] ^= (byte) mask;
    assertThrows(CorruptDataException.class, () -> Codec.decodeState(bytes));
    assertThrows(CorruptDataException.class,
        () -> CachedState.ofCheckpoint(new EntityId("T", "i"), bytes));
  }

  private static void assertCheckpointEntry(EntityId entity, byte[] bytes) {
    CachedState expected = CachedState.of(entity, Codec.decodeState(bytes));
    CachedState actual = CachedState.ofCheckpoint(entity, bytes);
    assertEquals(expected.isEncoded(), actual.isEncoded(), "form");
    assertArrayEquals(expected.encoded(), actual.encoded(), "bytes");
    assertEquals(expected.version(), actual.version(), "version");
    assertEquals(expected.exists(), actual.exists(), "exists");
    assertEquals(expected.holdsDependencies(), actual.holdsDependencies(), "dependencies");
    assertEquals(expected.weight(), actual.weight(), "weight");
    assertEquals(expected.decodedWeight(), actual.decodedWeight(), "decoded weight");
    assertEquals(expected.state(), actual.state(), "state");
  }

  /**
   * A state as checkpoints hold them: written by a few records (assignments in several data
   * centres, so write counts of one or more entries). When {@code plain}: registers of printable
   * strings (quotes, backslashes and DEL included), integers, booleans and null under ASCII keys,
   * hidden keys among them, at most 16; else also counters, deletions, doubles, objects, non-ASCII
   * keys and values, dependency keys, more keys than a small map holds.
   */
  private static EntityState checkpointedState(java.util.Random random, boolean plain) {
    EntityState state = EntityState.ABSENT;
    long timestamp = 1 + random.nextInt(1000);
    if (random.nextInt(10) == 0) {
      timestamp = Long.MAX_VALUE - 10_000 - random.nextInt(1000); // eight full bytes
    }
    int keyPool = plain ? 1 + random.nextInt(16) : 1 + random.nextInt(24);
    for (int r = 0, records = 1 + random.nextInt(4); r < records; r++) {
      List<Operation> operations = new java.util.ArrayList<>();
      for (int o = 0, count = 1 + random.nextInt(12); o < count; o++) {
        int index = random.nextInt(keyPool);
        String key = plain
            ? (index % 5 == 4 ? "$hidden" : "field") + index
            : (random.nextInt(6) == 0 ? "f\u00e9" : random.nextInt(8) == 0
                ? dev.troupe.model.dependency.DependencyKeys.outgoing("k") : "field")
                + random.nextInt(keyPool);
        int kind = plain ? random.nextInt(6) : random.nextInt(11);
        operations.add(switch (kind) {
          case 0, 1 -> new Assign(key, printable(random));
          case 2 -> new Assign(key, Json.NODES.numberNode(
              (long) (random.nextLong() >> (10 + random.nextInt(54)))));
          case 3 -> new Assign(key, Json.NODES.booleanNode(random.nextBoolean()));
          case 4 -> new Assign(key, Json.NODES.nullNode());
          case 5 -> new Assign(key, Json.NODES.textNode(""));
          case 6 -> new Increment(key, 1 + random.nextInt(5));
          case 7 -> new DeleteKey(key);
          case 8 -> new Assign(key, Json.NODES.numberNode(random.nextLong()));
          case 9 -> new Assign(key, Json.NODES.textNode("caf\u00e9 " + random.nextDouble()));
          default -> random.nextInt(4) == 0 ? new DeleteEntity()
              : new Assign(key, Json.parse("{\"a\":[1.5,\"b\"]}"));
        });
      }
      // Data centres of one to three bytes as varints.
      int originDc = switch (random.nextInt(6)) {
        case 0 -> 1 + random.nextInt(3);
        case 1 -> 200 + random.nextInt(100_000);
        default -> 0;
      };
      try {
        state = state.apply(operations, timestamp, originDc);
      } catch (RuntimeException refused) {
        // A record the state refuses (an increment of a register): not written.
      }
      timestamp += 1 + random.nextInt(1000);
    }
    return state;
  }

  @Provide
  Arbitrary<List<Operation>> operationLists() {
    return operation().list().ofMaxSize(5);
  }

  @Property(tries = 200)
  void aFlippedByteInARecordIsDetected(
      @ForAll("records") TransactionRecord record,
      @ForAll @IntRange(min = 0, max = 100_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] encoded = Codec.encodeRecord(record);
    encoded[where % encoded.length] ^= (byte) mask;
    assertThrows(CorruptDataException.class, () -> Codec.decodeRecord(encoded));
  }

  @Property(tries = 200)
  void aFlippedByteInAStateIsDetected(
      @ForAll("states") EntityState state,
      @ForAll @IntRange(min = 0, max = 100_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] encoded = Codec.encodeState(state);
    encoded[where % encoded.length] ^= (byte) mask;
    assertThrows(CorruptDataException.class, () -> Codec.decodeState(encoded));
  }

  @Property(tries = 100)
  void aTruncatedValueIsDetected(
      @ForAll("records") TransactionRecord record, @ForAll @IntRange(min = 1, max = 1000) int cut) {
    byte[] encoded = Codec.encodeRecord(record);
    byte[] shorter = java.util.Arrays.copyOf(encoded, Math.max(0, encoded.length - cut));
    assertThrows(CorruptDataException.class, () -> Codec.decodeRecord(shorter));
  }

  @Property(tries = 100)
  void theCommitTimestampCanBeSetAfterEncoding(
      @ForAll("records") TransactionRecord record, @ForAll long timestamp) {
    byte[] encoded =
        Codec.encodeRecord(
            new TransactionRecord(record.transactionId(), 0, record.originDc(), record.writes()));
    TransactionRecord expected =
        new TransactionRecord(record.transactionId(), timestamp, record.originDc(), record.writes());
    assertArrayEquals(Codec.encodeRecord(expected), Codec.withCommitTimestamp(encoded, timestamp));
    assertEquals(expected, Codec.decodeRecord(encoded));
  }

  @Example
  void aValueOfAnotherTypeIsRejected() {
    byte[] state = Codec.encodeState(EntityState.ABSENT);
    CorruptDataException e =
        assertThrows(CorruptDataException.class, () -> Codec.decodeRecord(state));
    assertEquals(true, e.getMessage().contains("record type"));
    byte[] position = Codec.encodePosition(new JournalPosition(5, 7));
    assertEquals(new JournalPosition(5, 7), Codec.decodePosition(position));
    assertThrows(CorruptDataException.class, () -> Codec.decodeState(position));
  }

  @Example
  void anUnknownFormatVersionIsRejected() {
    byte[] state = Codec.encodeState(EntityState.ABSENT);
    state[1] = 9;
    // Re-seal the checksum so that only the version is wrong.
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(state, 0, state.length - 4);
    int value = (int) crc.getValue();
    for (int i = 0; i < 4; i++) {
      state[state.length - 4 + i] = (byte) (value >>> (24 - 8 * i));
    }
    CorruptDataException e =
        assertThrows(CorruptDataException.class, () -> Codec.decodeState(state));
    assertEquals(true, e.getMessage().contains("format revision"));
  }

  // ------------------------------------------------------------------------------ generators

  @Provide
  Arbitrary<TransactionRecord> records() {
    Arbitrary<EntityWrite> write =
        Combinators.combine(entities(), operation().list().ofMaxSize(5)).as(EntityWrite::new);
    return Combinators.combine(
            Arbitraries.longs(),
            Arbitraries.longs().greaterOrEqual(0),
            Arbitraries.integers().between(0, 1000),
            write.list().ofMinSize(1).ofMaxSize(4))
        .as(TransactionRecord::new);
  }

  @Provide
  Arbitrary<EntityState> states() {
    return Combinators.combine(
            Arbitraries.maps(keys(), value()).ofMaxSize(5),
            Arbitraries.longs().greaterOrEqual(0),
            Arbitraries.of(true, false))
        .as(EntityState::new);
  }

  static Arbitrary<EntityId> entities() {
    Arbitrary<String> name = Arbitraries.strings().alpha().numeric().withChars("-_.é日").ofMinLength(1).ofMaxLength(12);
    return Combinators.combine(name, name).as(EntityId::new);
  }

  static Arbitrary<String> keys() {
    return Arbitraries.strings().alpha().withChars("_é").ofMinLength(0).ofMaxLength(8);
  }

  static Arbitrary<Tag> tags() {
    return Combinators.combine(
            Arbitraries.integers().between(0, 5), Arbitraries.longs(), Arbitraries.integers().between(0, 50))
        .as(Tag::new);
  }

  /** JSON values as the server produces them (parsed: integers are longs). */
  static Arbitrary<JsonNode> json() {
    Arbitrary<JsonNode> scalar =
        Arbitraries.oneOf(
            Arbitraries.longs().map(l -> (JsonNode) Json.NODES.numberNode(l)),
            Arbitraries.strings()
                .alpha()
                .withChars(" \"\\/\n\té日€")
                .ofMaxLength(10)
                .map(s -> (JsonNode) Json.NODES.textNode(s)),
            Arbitraries.of(true, false).map(b -> (JsonNode) Json.NODES.booleanNode(b)),
            Arbitraries.just((JsonNode) Json.NODES.nullNode()),
            Arbitraries.doubles()
                .between(-1e9, 1e9)
                .map(d -> (JsonNode) Json.NODES.numberNode(d)));
    Arbitrary<JsonNode> array =
        scalar.list().ofMaxSize(3).map(items -> {
          var node = Json.NODES.arrayNode();
          items.forEach(node::add);
          return (JsonNode) node;
        });
    Arbitrary<JsonNode> object =
        Arbitraries.maps(keys(), scalar).ofMaxSize(3).map(fields -> {
          var node = Json.NODES.objectNode();
          fields.forEach(node::set);
          return (JsonNode) node;
        });
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, scalar), net.jqwik.api.Tuple.of(1, array), net.jqwik.api.Tuple.of(1, object));
  }

  static Arbitrary<Operation> operation() {
    return Arbitraries.oneOf(
        Combinators.combine(keys(), json()).as(Assign::new),
        keys().map(DeleteKey::new),
        Combinators.combine(keys(), Arbitraries.longs()).as(Increment::new),
        Combinators.combine(keys(), json(), tags()).as(AddElement::new),
        Combinators.combine(keys(), json(), tags().set().ofMaxSize(3))
            .as((k, e, t) -> (Operation) new RemoveElement(k, e, t)),
        Arbitraries.just(new DeleteEntity()),
        Combinators.combine(keys(), dependencies(), json().injectNull(0.3))
            .as((k, d, c) -> (Operation) new Operation.RecordDependency(k, d, c)),
        Combinators.combine(keys(), dependencies())
            .as((k, d) -> (Operation) new Operation.ForgetDependency(k, d.id())));
  }

  /** Declared dependencies of either kind, with every function. */
  static Arbitrary<Dependency> dependencies() {
    Arbitrary<KeyReference> end = Combinators.combine(entities(),
        keys().filter(key -> !key.isEmpty())).as(KeyReference::new);
    Arbitrary<String> function = Arbitraries.of("replicate", "sum", "count", "min", "max",
        "cel:new_value", "cel:current == null ? new_value : current + 1");
    return Combinators.combine(end, end, Arbitraries.of(true, false), function)
        .filter((leader, follower, update, f) -> !leader.equals(follower))
        .as((leader, follower, update, f) -> update
            ? new Dependency(DependencyKind.UPDATE, leader, follower,
                dev.troupe.model.dependency.DependencyFunction.parse(f))
            : new Dependency(DependencyKind.DELETE, leader, follower, null));
  }

  static Arbitrary<Value> value() {
    Arbitrary<Value> register =
        Combinators.combine(json(), Arbitraries.longs().greaterOrEqual(0), Arbitraries.integers().between(0, 9))
            .as(RegisterValue::new);
    Arbitrary<Map<Integer, Long>> amounts =
        Arbitraries.maps(Arbitraries.integers().between(0, 9), Arbitraries.longs().greaterOrEqual(0))
            .ofMaxSize(3);
    Arbitrary<Value> counter = Combinators.combine(amounts, amounts).as(CounterValue::new);
    Arbitrary<Value> set =
        Combinators.combine(json(), tags().set().ofMinSize(1).ofMaxSize(3))
            .as(SetEntry::new)
            .list()
            .ofMaxSize(4)
            .map(entries -> {
              SetValue result = SetValue.EMPTY;
              for (SetEntry entry : entries) {
                for (Tag tag : entry.tags()) {
                  result = result.add(entry.element(), tag);
                }
              }
              return (Value) result;
            });
    Arbitrary<Value> dependencies = Combinators.combine(dependencies(), json().injectNull(0.5))
        .as(DependencyTable.Entry::new).list().ofMinSize(1).ofMaxSize(3).map(entries -> {
          DependencyTable table = DependencyTable.EMPTY;
          for (DependencyTable.Entry entry : entries) {
            table = table.with(entry.dependency(), entry.contribution());
          }
          return (Value) table;
        });
    return Arbitraries.oneOf(register, counter, set, dependencies);
  }

  record SetEntry(JsonNode element, Set<Tag> tags) {}

  @Example
  void estimatedWeightGrowsWithContent() {
    EntityState small = new EntityState(Map.of(), 1, true);
    Map<String, Value> values = new HashMap<>();
    values.put("name", new RegisterValue(Json.NODES.textNode("x".repeat(1000)), 1, 1));
    EntityState large = new EntityState(values, 1, true);
    assertEquals(true, Codec.estimateWeight(large) > Codec.estimateWeight(small) + 1000);
    assertEquals(true, Codec.estimateWeight(new EntityState(Map.of(), 1, true)) > 0);
    List.of(small, large).forEach(s -> assertEquals(s, Codec.decodeState(Codec.encodeState(s))));
  }
}
