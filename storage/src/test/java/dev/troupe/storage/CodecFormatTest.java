package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The persisted formats pinned byte for byte: stored journals and checkpoints must load in every
 * later build, so a change that alters any of these encodings fails here (and needs a new format
 * revision with a reader for the old one). One vector per format, each using every operation and
 * value kind. Maps and sets have one entry each where their iteration order is not fixed.
 */
class CodecFormatTest {
  private static final HexFormat HEX = HexFormat.of();
  private static final EntityId CART = new EntityId("Cart", "c1");
  private static final Dependency DEPENDENCY = new Dependency(DependencyKind.UPDATE,
      new KeyReference(new EntityId("Product", "p1"), "price"),
      new KeyReference(CART, "total"), new DependencyFunction.Sum());

  static final String RECORD =
      "01010000011f71fb04cb0000011f71fb0837010107436172740063310801046e616d65177b226122"
      + "3a5b312c2278222c747275652c6e756c6c5d7d02036f6c640305636f756e74090404746167730522"
      + "7265642202000000000000004d030504746167730622626c75652201000000000000000009010709"
      + "24696e3a746f74616c01ce017b226964223a2257794a3163475268644755694c434a51636d396b64"
      + "574e3049697769634445694c434a77636d6c6a5a534973496b4e68636e51694c434a6a4d53497349"
      + "6e527664474673496c30222c226b696e64223a22757064617465222c226c6561646572223a7b2265"
      + "6e74697479223a2250726f647563742f7031222c226b6579223a227072696365227d2c22666f6c6c"
      + "6f776572223a7b22656e74697479223a22436172742f6331222c226b6579223a22746f74616c227d"
      + "2c2266756e6374696f6e223a2273756d227d01023132080a246f75743a70726963654757794a3163"
      + "475268644755694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a53497349"
      + "6b4e68636e51694c434a6a4d534973496e527664474673496c30060ae6bba9";
  static final String STATE =
      "0201000000000000109201040924696e3a746f74616c040101ce017b226964223a2257794a316347"
      + "5268644755694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b"
      + "4e68636e51694c434a6a4d534973496e527664474673496c30222c226b696e64223a227570646174"
      + "65222c226c6561646572223a7b22656e74697479223a2250726f647563742f7031222c226b657922"
      + "3a227072696365227d2c22666f6c6c6f776572223a7b22656e74697479223a22436172742f633122"
      + "2c226b6579223a22746f74616c227d2c2266756e6374696f6e223a2273756d227d0102313205636f"
      + "756e740201000e010104046e616d65010522416e6e2200000000000003e801047461677303010522"
      + "726564220102000000000000004d0387aa253c";
  /**
   * The same state as written before issue 20, its keys in the hash tree's order (now in key
   * order: a state of few keys is a SmallPersistentMap). Same format; a reader takes the keys in
   * any order, so checkpoints written by an earlier build still read.
   */
  static final String STATE_IN_HASH_ORDER =
      "0201000000000000109201040924696e3a746f74616c040101ce017b226964223a2257794a316347"
      + "5268644755694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b"
      + "4e68636e51694c434a6a4d534973496e527664474673496c30222c226b696e64223a227570646174"
      + "65222c226c6561646572223a7b22656e74697479223a2250726f647563742f7031222c226b657922"
      + "3a227072696365227d2c22666f6c6c6f776572223a7b22656e74697479223a22436172742f633122"
      + "2c226b6579223a22746f74616c227d2c2266756e6374696f6e223a2273756d227d01023132046e61"
      + "6d65010522416e6e2200000000000003e80104746167730301052272656422010200000000000000"
      + "4d0305636f756e740201000e010104326fe329";
  static final String PREPARED =
      "040100000000000000630743617274006331010305636f756e7406030701020000000000000005bc"
      + "57e122";
  static final String DECIDED =
      "050100000000000000630207436172740063310a50726f647563740070314ef9af74";
  static final String IDEMPOTENCY =
      "06010c74656e616e742f6b65792d3120000102030405060708090a0b0c0d0e0f1011121314151617"
      + "18191a1b1c1d1e1f0000018bcfe56800010743617274006331000000000000003700000000000000"
      + "38c8010b7b226f6b223a747275657d09392f4f";
  static final String POSITION =
      "030100000000000000110000011f71fb04cb58bb6ef6";

  static TransactionRecord record() {
    List<Operation> operations = List.of(
        new Operation.Assign("name", Json.parse("{\"a\":[1,\"x\",true,null]}")),
        new Operation.DeleteKey("old"),
        new Operation.Increment("count", -5),
        new Operation.AddElement("tags", Json.parse("\"red\""), new Tag(2, 77, 3)),
        new Operation.RemoveElement("tags", Json.parse("\"blue\""), Set.of(new Tag(0, 9, 1))),
        new Operation.RecordDependency("$in:total", DEPENDENCY, Json.parse("12")),
        new Operation.ForgetDependency("$out:price", DEPENDENCY.id()),
        new Operation.DeleteEntity());
    return new TransactionRecord(1234567890123L, 1234567890999L, 1,
        List.of(new EntityWrite(CART, operations)));
  }

  static EntityState state() {
    Map<String, Value> values = Map.of(
        "name", new RegisterValue(Json.parse("\"Ann\""), 1000L, 1),
        "count", new CounterValue(Map.of(0, 7L), Map.of(1, 2L)),
        "tags", new SetValue(Map.of("\"red\"",
            new SetValue.Element(Json.parse("\"red\""), Set.of(new Tag(2, 77, 3))))),
        "$in:total", DependencyTable.EMPTY.with(DEPENDENCY, Json.parse("12")));
    return new EntityState(values, 4242L, true);
  }

  static PreparedTransaction prepared() {
    return new PreparedTransaction(99L, CART,
        List.of(new Operation.Increment("count", 3)), new byte[] {7, 1, 2}, 5L);
  }

  static DecidedTransaction decided() {
    return new DecidedTransaction(99L, List.of(CART, new EntityId("Product", "p1")));
  }

  static IdempotencyRecord idempotency() {
    byte[] fingerprint = new byte[IdempotencyRecord.FINGERPRINT_BYTES];
    for (int i = 0; i < fingerprint.length; i++) {
      fingerprint[i] = (byte) i;
    }
    return new IdempotencyRecord("tenant/key-1", fingerprint, 1700000000000L, CART, 55L, 56L,
        200, "{\"ok\":true}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  @Test
  void transactionRecordsKeepTheirBytes() {
    byte[] encoded = Codec.encodeRecord(record());
    assertEquals(RECORD, HEX.formatHex(encoded));
    assertEquals(record(), Codec.decodeRecord(HEX.parseHex(RECORD)));
  }

  @Test
  void entityStatesKeepTheirBytes() {
    assertEquals(STATE, HEX.formatHex(Codec.encodeState(state())));
    assertEquals(state(), Codec.decodeState(HEX.parseHex(STATE)));
    assertEquals(state(), Codec.decodeState(HEX.parseHex(STATE_IN_HASH_ORDER)));
  }

  @Test
  void preparedTransactionsKeepTheirBytes() {
    assertEquals(PREPARED, HEX.formatHex(Codec.encodePrepared(prepared())));
    PreparedTransaction decoded = Codec.decodePrepared(HEX.parseHex(PREPARED));
    assertEquals(prepared().transactionId(), decoded.transactionId());
    assertEquals(prepared().operations(), decoded.operations());
    assertEquals(HEX.formatHex(prepared().redo()), HEX.formatHex(decoded.redo()));
  }

  /**
   * The decision entry's outline of a prepared record (issue 20) agrees with the decoded record
   * for operations, turns to redo, both (the pinned vector) and neither, and for a record holding
   * every operation kind.
   */
  @Test
  void preparedOutlinesAgreeWithTheDecodedRecords() {
    List<PreparedTransaction> parts = List.of(prepared(),
        new PreparedTransaction(7L, CART, List.of(new Operation.Increment("count", 1))),
        new PreparedTransaction(7L, CART, List.of(), new byte[] {1}, 3L),
        new PreparedTransaction(7L, CART, List.of()),
        new PreparedTransaction(7L, CART, record().writes().get(0).operations()));
    for (PreparedTransaction part : parts) {
      Codec.PreparedOutline outline = Codec.outlinePrepared(Codec.encodePrepared(part));
      assertEquals(new Codec.PreparedOutline(!part.operations().isEmpty(), part.needsRedo()),
          outline, part.toString());
    }
    assertEquals(new Codec.PreparedOutline(true, true),
        Codec.outlinePrepared(HEX.parseHex(PREPARED)));
    byte[] damaged = HEX.parseHex(PREPARED);
    damaged[12] ^= 1;
    org.junit.jupiter.api.Assertions.assertThrows(CorruptDataException.class,
        () -> Codec.outlinePrepared(damaged));
  }

  @Test
  void decidedTransactionsKeepTheirBytes() {
    assertEquals(DECIDED, HEX.formatHex(Codec.encodeDecided(decided())));
    assertEquals(decided(), Codec.decodeDecided(HEX.parseHex(DECIDED)));
  }

  @Test
  void idempotencyRecordsKeepTheirBytes() {
    assertEquals(IDEMPOTENCY, HEX.formatHex(Codec.encodeIdempotency(idempotency())));
    assertEquals(idempotency().qualifiedKey(),
        Codec.decodeIdempotency(HEX.parseHex(IDEMPOTENCY)).qualifiedKey());
  }

  @Test
  void journalPositionsKeepTheirBytes() {
    JournalPosition position = new JournalPosition(17L, 1234567890123L);
    assertEquals(POSITION, HEX.formatHex(Codec.encodePosition(position)));
    assertEquals(position, Codec.decodePosition(HEX.parseHex(POSITION)));
  }
}
