package dev.troupe.model.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The binary form of {@link Operation.AssignReplicated} pinned byte for byte (the other operations
 * are pinned by {@code storage}'s {@code CodecFormatTest}, inside the journal's records): it is in
 * journals and replication logs, so a change here needs a new operation type id.
 */
class OperationFormatTest {
  private static final HexFormat HEX = HexFormat.of();

  /** Type 9, key "name", value "Ann", stamp 1234567890123 (fixed 8 bytes), origin 300 (varint). */
  static final String ASSIGN_REPLICATED = "09" + "046e616d65" + "0522416e6e22"
      + "0000011f71fb04cb" + "ac02";

  /**
   * Type 10, receiver Account/b1 (its {@code EntityId} bytes, "Account", a zero byte, "b1", with a
   * length), action "credit", args {"amount":5} (JSON text with a length).
   */
  static final String SEND_MESSAGE = "0a" + "0a4163636f756e74006231" + "06637265646974"
      + "0c7b22616d6f756e74223a357d";

  @Test
  void messagesKeepTheirBytes() {
    Operation operation = new Operation.SendMessage(new dev.troupe.model.EntityId("Account", "b1"),
        "credit", Json.parse("{\"amount\":5}"));
    BinaryWriter out = new BinaryWriter(16);
    ValueEncoding.writeOperation(out, operation);
    assertEquals(SEND_MESSAGE, HEX.formatHex(out.toByteArray()));
    byte[] bytes = HEX.parseHex(SEND_MESSAGE);
    BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
    assertEquals(operation, ValueEncoding.readOperation(in));
    in.end();
  }

  @Test
  void stampedRegisterWritesKeepTheirBytes() {
    Operation operation = new Operation.AssignReplicated("name", Json.parse("\"Ann\""),
        1234567890123L, 300);
    BinaryWriter out = new BinaryWriter(16);
    ValueEncoding.writeOperation(out, operation);
    assertEquals(ASSIGN_REPLICATED, HEX.formatHex(out.toByteArray()));
    byte[] bytes = HEX.parseHex(ASSIGN_REPLICATED);
    BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
    assertEquals(operation, ValueEncoding.readOperation(in));
    in.end();
  }

  /**
   * Decoded operations and states share their keys' names (issue 20, memory: ten key names were
   * an eighth of a cached 1 KB record), whatever string the writer named them with.
   */
  @Test
  void decodedKeyNamesAreShared() {
    BinaryWriter out = new BinaryWriter(16);
    ValueEncoding.writeOperation(out, new Operation.Assign(new String("field3"),
        Json.parse("\"a\"")));
    byte[] assign = out.toByteArray();
    out = new BinaryWriter(16);
    ValueEncoding.writeOperation(out, new Operation.Increment(new String("field3"), 1));
    byte[] increment = out.toByteArray();
    String first = ((Operation.Assign) read(assign)).key();
    String second = ((Operation.Assign) read(assign)).key();
    String third = ((Operation.Increment) read(increment)).key();
    assertEquals("field3", first);
    assertSame(first, second);
    assertSame(first, third);
    dev.troupe.model.EntityState state = dev.troupe.model.EntityState.ABSENT.apply(
        java.util.List.of(new Operation.Assign(new String("field3"), Json.parse("\"b\""))), 7,
        1);
    out = new BinaryWriter(64);
    ValueEncoding.writeState(out, state);
    byte[] stateBytes = out.toByteArray();
    BinaryReader in = new BinaryReader(stateBytes, 0, stateBytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
    String stateKey = ValueEncoding.readState(in).values().keySet().iterator().next();
    assertSame(first, stateKey);
  }

  private static Operation read(byte[] bytes) {
    BinaryReader in = new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
    Operation operation = ValueEncoding.readOperation(in);
    in.end();
    return operation;
  }

  /** Passing over an operation ends exactly where reading it ends, for every operation type. */
  @Test
  void skippingAnOperationEndsWhereReadingItEnds() {
    dev.troupe.model.EntityId product = new dev.troupe.model.EntityId("Product", "p1");
    dev.troupe.model.dependency.Dependency dependency = new dev.troupe.model.dependency.Dependency(
        dev.troupe.model.dependency.DependencyKind.UPDATE,
        new dev.troupe.model.dependency.KeyReference(product, "price"),
        new dev.troupe.model.dependency.KeyReference(
            new dev.troupe.model.EntityId("Cart", "c1"), "total"),
        new dev.troupe.model.dependency.DependencyFunction.Sum());
    java.util.Set<dev.troupe.model.value.Tag> tags = java.util.Set.of(
        new dev.troupe.model.value.Tag(0, 9, 1), new dev.troupe.model.value.Tag(2, 77, 3));
    java.util.Map<Integer, Long> counts = java.util.Map.of(0, 7L, 1, -2L);
    java.util.List<Operation> operations = java.util.List.of(
        new Operation.Assign("name", Json.parse("{\"a\":[1,\"x\",true,null]}")),
        new Operation.AssignReplicated("name", Json.parse("\"Ann\""), 1234567890123L, 300),
        new Operation.DeleteKey("old"),
        new Operation.DeleteKeyReplicated("old", 99L, 2),
        new Operation.DeleteCounter("count",
            new dev.troupe.model.value.CounterValue(counts, java.util.Map.of(3, 4L))),
        new Operation.DeleteSet("tags", tags),
        new Operation.Increment("count", -5),
        new Operation.IncrementReplicated("count", 1L << 40, 7),
        new Operation.AddElement("tags", Json.parse("\"red\""),
            new dev.troupe.model.value.Tag(2, 77, 3)),
        new Operation.RemoveElement("tags", Json.parse("\"bl\\u00e9\""), tags),
        new Operation.RecordDependency("$in:total", dependency, Json.parse("12")),
        new Operation.RecordDependency("$out:price", dependency, null),
        new Operation.ForgetDependency("$out:price", dependency.id()),
        new Operation.SendMessage(product, "credit", Json.parse("{\"amount\":5}")),
        new Operation.DeleteEntity(),
        new Operation.DeleteEntity(counts),
        new Operation.DeleteEntityReplicated(5L, 1, null),
        new Operation.DeleteEntityReplicated(5L, 1, counts));
    java.util.Set<Byte> types = new java.util.HashSet<>();
    for (Operation operation : operations) {
      BinaryWriter out = new BinaryWriter(16);
      ValueEncoding.writeOperation(out, operation);
      out.fixedInt(0x5eed); // something after it, as in a record
      byte[] bytes = out.toByteArray();
      types.add(bytes[0]);
      BinaryReader read = new BinaryReader(bytes, 0, bytes.length,
          (position, message, cause) -> new IllegalStateException(message, cause));
      assertEquals(operation, ValueEncoding.readOperation(read));
      BinaryReader skipped = new BinaryReader(bytes, 0, bytes.length,
          (position, message, cause) -> new IllegalStateException(message, cause));
      ValueEncoding.skipOperation(skipped);
      assertEquals(read.position(), skipped.position(), operation.toString());
      assertEquals(0x5eed, skipped.fixedInt());
      skipped.end();
    }
    assertEquals(16, types.size(), "every operation type: " + types);
  }
}
