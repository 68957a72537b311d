package dev.troupe.txn.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
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
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.entity.LockTable;
import dev.troupe.txn.wire.Envelope.Destination;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Each message type pinned byte for byte at its current version: nodes of different builds talk
 * to each other during a rolling upgrade, so a change that alters a message's bytes must come
 * with a new version (and a reader for the old one), and fails here until it does. Sets and maps
 * the codec does not sort hold one entry.
 */
class WireFormatTest {
  private static final HexFormat HEX = HexFormat.of();
  private static final EntityId CART = new EntityId("Cart", "c1");
  private static final EntityId PRODUCT = new EntityId("Product", "p1");
  private static final Dependency PRICE = new Dependency(DependencyKind.UPDATE,
      new KeyReference(PRODUCT, "price"), new KeyReference(CART, "total"),
      new DependencyFunction.Sum());
  private static final TypeReference CART_TYPE = new TypeReference("Cart", 1700000000123L);

  /** Type name to hex frame, from {@code wire-format-vectors.txt} beside this class. */
  private static final Map<String, String> VECTORS = vectors();

  private static Map<String, String> vectors() {
    try (InputStream in = WireFormatTest.class.getResourceAsStream("wire-format-vectors.txt")) {
      Map<String, String> vectors = new LinkedHashMap<>();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!line.isBlank() && !line.startsWith("#")) {
          String[] fields = line.split(" ");
          vectors.put(fields[0], fields[1]);
        }
      }
      return vectors;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static EntityState state() {
    Map<String, Value> values = Map.of(
        "name", new RegisterValue(Json.parse("\"Ann\""), 1000L, 1),
        "count", new CounterValue(Map.of(0, 7L), Map.of(1, 2L)),
        "tags", new SetValue(Map.of("\"red\"",
            new SetValue.Element(Json.parse("\"red\""), Set.of(new Tag(2, 77, 3))))),
        "$in:total", DependencyTable.EMPTY.with(PRICE, Json.parse("12")));
    return new EntityState(values, 4242L, true);
  }

  static List<Turn> everyTurn() {
    Map<String, com.fasterxml.jackson.databind.JsonNode> assignments = new LinkedHashMap<>();
    assignments.put("name", Json.parse("{\"first\":\"Ann\",\"n\":[1,2.5,null,true]}"));
    assignments.put("age", Json.parse("41"));
    return List.of(new Turn.AssignKeys(assignments), new Turn.DeleteKey("old"),
        new Turn.IncrementKey("count", -3), new Turn.AddElement("tags", Json.parse("\"red\"")),
        new Turn.RemoveElement("tags", Json.parse("\"blue\"")), new Turn.DeleteEntity(),
        new Turn.DiscardHiddenValues(),
        new Turn.InvokeAction("checkout", Json.parse("{\"card\":\"x\"}")),
        new Turn.RegisterDependency(PRICE), new Turn.DeregisterDependency(PRICE.id(), "price"));
  }

  static List<Forward> everyForward() {
    return List.of(new Forward.LeaderChanged(PRICE, Json.parse("3"), Json.parse("4")),
        new Forward.LeaderDeleted(PRICE), new Forward.FollowerDeleted(PRICE),
        new Forward.Registered(PRICE, null), new Forward.RegistrationRequested(PRICE),
        new Forward.Deregistered(PRICE),
        new Forward.Probe(PRICE, new KeyReference(PRODUCT, "price"),
            Forward.Direction.UPSTREAM, 2));
  }

  static WireResult done() {
    return new WireResult.Done(5000L, state(), true, 4242L, List.of(
        new Forward.LeaderChanged(PRICE, null, Json.parse("4"))), Map.of(PRICE.id(), 1),
        Map.of());
  }

  static WireResult failed() {
    return new WireResult.Failed(ErrorCode.ABORTED, "lock_conflict", "died (wait-die)");
  }

  static Map<String, Envelope> examples() {
    Destination toCart = new Destination.ToEntity(CART);
    Destination toNode = new Destination.ToNode(5);
    Map<String, Envelope> examples = new LinkedHashMap<>();
    examples.put("Prepare", new Envelope(1, toCart, new WireMessage.Prepare(101L, 100L, CART,
        CART_TYPE, everyTurn(), true, everyForward(),
        Map.of("total", LockTable.Mode.WRITE, "items", LockTable.Mode.READ), true)));
    examples.put("Vote", new Envelope(2, toNode, new WireMessage.Vote(101L, CART, 1, done())));
    examples.put("ForwardsChanged", new Envelope(1, toCart,
        new WireMessage.ForwardsChanged(101L, CART, 2, everyForward())));
    examples.put("Decision", new Envelope(1, toCart, new WireMessage.Decision(101L, CART, true)));
    examples.put("Acknowledgement", new Envelope(2, toNode,
        new WireMessage.Acknowledgement(101L, CART, failed())));
    examples.put("StepRequest", new Envelope(3, toCart, new WireMessage.StepRequest(102L, 99L,
        CART, CART_TYPE, new Turn.IncrementKey("count", 1))));
    examples.put("StepAnswer", new Envelope(2, toNode,
        new WireMessage.StepAnswer(102L, CART, done())));
    examples.put("TurnRequest", new Envelope(3, toCart, new WireMessage.TurnRequest(103L, CART,
        CART_TYPE, new Turn.AddElement("tags", Json.parse("{\"a\":1}")))));
    examples.put("TurnAnswer", new Envelope(2, toNode,
        new WireMessage.TurnAnswer(103L, CART, failed())));
    examples.put("DecisionQuery", new Envelope(2, toNode,
        new WireMessage.DecisionQuery(101L, 2, CART)));
    examples.put("DecisionAnswer", new Envelope(5, new Destination.ToNode(2),
        new WireMessage.DecisionAnswer(101L, CART, WireMessage.DecisionState.UNDECIDED)));
    examples.put("ReadRequest", new Envelope(2, toCart,
        new WireMessage.ReadRequest(104L, CART, 4300L)));
    examples.put("ReadAnswer", new Envelope(3, new Destination.ToNode(2),
        new WireMessage.ReadAnswer(104L, CART, new WireResult.Done(4242L, state(), false, 4242L,
            List.of(), Map.of(), Map.of()))));
    examples.put("NodeStatusQuery", new Envelope(2, new Destination.ToNode(3),
        new WireMessage.NodeStatusQuery(105L)));
    examples.put("NodeStatusAnswer", new Envelope(3, new Destination.ToNode(2),
        new WireMessage.NodeStatusAnswer(105L, List.of(0, 5, 130), 1234L, 201_326_592L,
            402_653_184L, 65_536L, null)));
    return examples;
  }

  /**
   * A node status answer with the member's HTTP URL is version 2: version 1's bytes (the pinned
   * vector, written when the URL is unknown) followed by the URL, so a node of the previous build
   * refuses it (a version newer than it reads: that member's numbers stay null) rather than
   * misreads it, and this build still reads version 1 (URL null).
   */
  @Test
  void aNodeStatusAnswerWithAnHttpUrlIsVersionTwo() {
    Envelope withUrl = new Envelope(3, new Destination.ToNode(2), new WireMessage.NodeStatusAnswer(
        105L, List.of(0, 5, 130), 1234L, 201_326_592L, 402_653_184L, 65_536L,
        "http://10.0.0.3:8080"));
    byte[] bytes = WireCodec.encode(withUrl);
    assertEquals(2, bytes[1], "version byte");
    assertEquals(withUrl, WireCodec.decode(bytes));
    assertEquals(1, HEX.parseHex(VECTORS.get("NodeStatusAnswer"))[1]);
  }

  @Test
  void everyMessageTypeKeepsItsBytes() {
    Map<String, Envelope> examples = examples();
    assertEquals(WireMessage.class.getPermittedSubclasses().length, examples.size());
    assertEquals(examples.keySet(), VECTORS.keySet());
    StringBuilder changed = new StringBuilder();
    examples.forEach((name, envelope) -> {
      String actual = HEX.formatHex(WireCodec.encode(envelope));
      if (!actual.equals(VECTORS.get(name))) {
        changed.append(name).append(": ").append(actual).append('\n');
      }
    });
    assertEquals("", changed.toString(), "message formats changed (a new version is needed)");
  }

  /**
   * Messages carrying a state, as written before issue 20 (the state's keys in the hash tree's
   * order; now in key order, a state of few keys being a SmallPersistentMap): the same format, so
   * a node of this build reads them from a node of the previous one.
   */
  @Test
  void messagesWrittenWithTheirStatesInHashOrderStillDecode() {
    IN_HASH_ORDER.forEach((name, hex) ->
        assertEquals(examples().get(name), WireCodec.decode(HEX.parseHex(hex)), name));
  }

  private static final Map<String, String> IN_HASH_ORDER = Map.of(
      "ReadAnswer", "0d010000014d0302020000000000000068074361727400633101000000000000109200000000"
          + "0000109201040924696e3a746f74616c040101ce017b226964223a2257794a31634752686447"
          + "55694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b4e68"
          + "636e51694c434a6a4d534973496e527664474673496c30222c226b696e64223a227570646174"
          + "65222c226c6561646572223a7b22656e74697479223a2250726f647563742f7031222c226b65"
          + "79223a227072696365227d2c22666f6c6c6f776572223a7b22656e74697479223a2243617274"
          + "2f6331222c226b6579223a22746f74616c227d2c2266756e6374696f6e223a2273756d227d01"
          + "023132046e616d65010522416e6e2200000000000003e8010474616773030105227265642201"
          + "02000000000000004d0305636f756e740201000e010104000000000000001092000000ac99b0"
          + "08",
      "Vote", "02010000026d0202050000000000000065074361727400633101010000000000001388000000"
          + "000000109201040924696e3a746f74616c040101ce017b226964223a2257794a316347526864"
          + "4755694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b4e"
          + "68636e51694c434a6a4d534973496e527664474673496c30222c226b696e64223a2275706461"
          + "7465222c226c6561646572223a7b22656e74697479223a2250726f647563742f7031222c226b"
          + "6579223a227072696365227d2c22666f6c6c6f776572223a7b22656e74697479223a22436172"
          + "742f6331222c226b6579223a22746f74616c227d2c2266756e6374696f6e223a2273756d227d"
          + "01023132046e616d65010522416e6e2200000000000003e80104746167730301052272656422"
          + "0102000000000000004d0305636f756e740201000e010104010000000000001092010101ce01"
          + "7b226964223a2257794a3163475268644755694c434a51636d396b64574e3049697769634445"
          + "694c434a77636d6c6a5a534973496b4e68636e51694c434a6a4d534973496e52766447467349"
          + "6c30222c226b696e64223a22757064617465222c226c6561646572223a7b22656e7469747922"
          + "3a2250726f647563742f7031222c226b6579223a227072696365227d2c22666f6c6c6f776572"
          + "223a7b22656e74697479223a22436172742f6331222c226b6579223a22746f74616c227d2c22"
          + "66756e6374696f6e223a2273756d227d00010134014757794a3163475268644755694c434a51"
          + "636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b4e68636e51694c43"
          + "4a6a4d534973496e527664474673496c300100e12134ae",
      "StepAnswer", "07010000026c0202050000000000000066074361727400633101000000000000138800000000"
          + "0000109201040924696e3a746f74616c040101ce017b226964223a2257794a31634752686447"
          + "55694c434a51636d396b64574e3049697769634445694c434a77636d6c6a5a534973496b4e68"
          + "636e51694c434a6a4d534973496e527664474673496c30222c226b696e64223a227570646174"
          + "65222c226c6561646572223a7b22656e74697479223a2250726f647563742f7031222c226b65"
          + "79223a227072696365227d2c22666f6c6c6f776572223a7b22656e74697479223a2243617274"
          + "2f6331222c226b6579223a22746f74616c227d2c2266756e6374696f6e223a2273756d227d01"
          + "023132046e616d65010522416e6e2200000000000003e8010474616773030105227265642201"
          + "02000000000000004d0305636f756e740201000e010104010000000000001092010101ce017b"
          + "226964223a2257794a3163475268644755694c434a51636d396b64574e304969776963444569"
          + "4c434a77636d6c6a5a534973496b4e68636e51694c434a6a4d534973496e527664474673496c"
          + "30222c226b696e64223a22757064617465222c226c6561646572223a7b22656e74697479223a"
          + "2250726f647563742f7031222c226b6579223a227072696365227d2c22666f6c6c6f77657222"
          + "3a7b22656e74697479223a22436172742f6331222c226b6579223a22746f74616c227d2c2266"
          + "756e6374696f6e223a2273756d227d00010134014757794a3163475268644755694c434a5163"
          + "6d396b64574e3049697769634445694c434a77636d6c6a5a534973496b4e68636e51694c434a"
          + "6a4d534973496e527664474673496c300100949c3771");

  @Test
  void everyPinnedVectorDecodesToItsMessage() {
    examples().forEach((name, envelope) ->
        assertEquals(envelope, WireCodec.decode(HEX.parseHex(VECTORS.get(name))), name));
  }

  /**
   * A turn request carrying a replica application, pinned apart from the per-message vectors
   * (turn kind 11 came after them: adding it changed no earlier bytes).
   */
  static final String APPLY_REPLICATED_TURN_REQUEST =
      "08010000006c03010743617274006331000000000000006707436172740063310443617274000001"
      + "8bcfe5687b0b8803000000000000012c000000000000012e0502036f6c640305636f756e74090104"
      + "6e616d650522416e6e22040474616773052272656422880300000000000000020306bc100a05";

  static Envelope applyReplicatedRequest() {
    Turn turn = new Turn.ApplyReplicated(392, 300L, 302L, List.of(
        new dev.troupe.model.Operation.DeleteKey("old"),
        new dev.troupe.model.Operation.Increment("count", -5),
        new dev.troupe.model.Operation.Assign("name", Json.parse("\"Ann\"")),
        new dev.troupe.model.Operation.AddElement("tags", Json.parse("\"red\""),
            new Tag(392, 2, 3)),
        new dev.troupe.model.Operation.DeleteEntity()));
    return new Envelope(3, new Destination.ToEntity(CART),
        new WireMessage.TurnRequest(103L, CART, CART_TYPE, turn));
  }

  /** A turn request carrying a message's delivery (turn kind 12, after all the others). */
  static final String DELIVER_MESSAGE_TURN_REQUEST =
      "080100000044030107436172740063310000000000000067074361727400633104436172740000018bcfe5687b"
      + "0c" + "000000000000012c" + "02" + "0453007331" + "0468656172" + "01077b2276223a317d"
      + "62266d81";

  static Envelope deliverMessageRequest() {
    Turn turn = new Turn.DeliverMessage(300L, 2, new dev.troupe.model.EntityId("S", "s1"),
        "hear", Json.parse("{\"v\":1}"));
    return new Envelope(3, new Destination.ToEntity(CART),
        new WireMessage.TurnRequest(103L, CART, CART_TYPE, turn));
  }

  /** Another origin's message, consumed (turn kind 13: the origin and outcome, then kind 12's). */
  static final String DELIVER_MESSAGE_FROM_TURN_REQUEST =
      "08010000005a030107436172740063310000000000000067074361727400633104436172740000018bcfe5687b"
      + "0d" + "05" + "01" + "13707265636f6e646974696f6e5f6661696c6564" + "000000000000012c" + "02"
      + "0453007331" + "0468656172" + "01077b2276223a317d" + "7b4cb081";

  static Envelope deliverMessageFromRequest() {
    Turn turn = new Turn.DeliverMessage(4, 300L, 2, new dev.troupe.model.EntityId("S", "s1"),
        "hear", Json.parse("{\"v\":1}"), "precondition_failed");
    return new Envelope(3, new Destination.ToEntity(CART),
        new WireMessage.TurnRequest(103L, CART, CART_TYPE, turn));
  }

  @Test
  void anotherOriginsDeliveryKeepsItsBytes() {
    assertEquals(DELIVER_MESSAGE_FROM_TURN_REQUEST,
        HEX.formatHex(WireCodec.encode(deliverMessageFromRequest())));
    assertEquals(deliverMessageFromRequest(),
        WireCodec.decode(HEX.parseHex(DELIVER_MESSAGE_FROM_TURN_REQUEST)));
  }

  @Test
  void aDeliveryKeepsItsBytes() {
    assertEquals(DELIVER_MESSAGE_TURN_REQUEST,
        HEX.formatHex(WireCodec.encode(deliverMessageRequest())));
    assertEquals(deliverMessageRequest(),
        WireCodec.decode(HEX.parseHex(DELIVER_MESSAGE_TURN_REQUEST)));
  }

  /**
   * A batched replica application (turn kind 14: several segments), pinned like kind 11; one
   * segment is still written as kind 11, byte for byte ({@link #aReplicaApplicationKeepsItsBytes}).
   */
  static final String APPLY_REPLICATED_SEGMENTS_TURN_REQUEST =
      "080100000061030107436172740063310000000000000067074361727400633104436172740000018bcfe5687b"
      + "0e" + "8803" + "02" + "000000000000012c" + "000000000000012e" + "01" + "0305636f756e7409"
      + "0000000000000136" + "0000000000000137" + "01" + "01046e616d650522416e6e22"
      + "1378e2f8";

  static Envelope applyReplicatedSegmentsRequest() {
    Turn turn = new Turn.ApplyReplicated(392, List.of(
        new Turn.ApplyReplicated.Segment(300L, 302L, List.of(
            new dev.troupe.model.Operation.Increment("count", -5))),
        new Turn.ApplyReplicated.Segment(310L, 311L, List.of(
            new dev.troupe.model.Operation.Assign("name", Json.parse("\"Ann\""))))));
    return new Envelope(3, new Destination.ToEntity(CART),
        new WireMessage.TurnRequest(103L, CART, CART_TYPE, turn));
  }

  @Test
  void aBatchedReplicaApplicationKeepsItsBytes() {
    assertEquals(APPLY_REPLICATED_SEGMENTS_TURN_REQUEST,
        HEX.formatHex(WireCodec.encode(applyReplicatedSegmentsRequest())));
    assertEquals(applyReplicatedSegmentsRequest(),
        WireCodec.decode(HEX.parseHex(APPLY_REPLICATED_SEGMENTS_TURN_REQUEST)));
  }

  @Test
  void aReplicaApplicationKeepsItsBytes() {
    assertEquals(APPLY_REPLICATED_TURN_REQUEST,
        HEX.formatHex(WireCodec.encode(applyReplicatedRequest())));
    assertEquals(applyReplicatedRequest(),
        WireCodec.decode(HEX.parseHex(APPLY_REPLICATED_TURN_REQUEST)));
  }

  /**
   * A turn request with an idempotency record: version 2 (the record's stored frame after the
   * turn); without one it is still version 1, byte for byte ({@link #everyMessageTypeKeepsItsBytes}).
   */
  static final String IDEMPOTENT_TURN_REQUEST =
      "080200000035030107436172740063310000000000000067074361727400633104436172740000018bcfe5687b"
      + "0305636f756e7402" + "050102030405" + "946026fa";

  static Envelope idempotentTurnRequest() {
    return new Envelope(3, new Destination.ToEntity(CART), new WireMessage.TurnRequest(103L, CART,
        CART_TYPE, new Turn.IncrementKey("count", 1), new byte[] {1, 2, 3, 4, 5}));
  }

  @Test
  void anIdempotentTurnRequestIsVersionTwoAndKeepsItsBytes() {
    assertEquals(IDEMPOTENT_TURN_REQUEST, HEX.formatHex(WireCodec.encode(idempotentTurnRequest())));
    assertEquals(idempotentTurnRequest(),
        WireCodec.decode(HEX.parseHex(IDEMPOTENT_TURN_REQUEST)));
    assertEquals(1, HEX.parseHex(VECTORS.get("TurnRequest"))[1], "without a record: version 1");
    assertEquals(2, HEX.parseHex(IDEMPOTENT_TURN_REQUEST)[1]);
  }

  @Test
  void aResultOfAnAbsentEntityRoundTripsWithoutAState() {
    // A turn or part that deleted its entity answers Done with a null state.
    Envelope deleted = new Envelope(2, new Destination.ToNode(5), new WireMessage.Vote(7L,
        CART, 1, new WireResult.Done(5000L, null, true, 4242L, List.of(), Map.of(), Map.of())));
    assertEquals(deleted, WireCodec.decode(WireCodec.encode(deleted)));
  }
}
