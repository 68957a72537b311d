package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The answers the server writes as bytes without Jackson (issue 20) are byte for byte what
 * Jackson wrote for them before: the same JSON, the same escaping.
 */
class AnswerBytesTest {
  /** Names every branch of the fast path meets, and every escape Jackson makes. */
  private static final List<String> NAMES = List.of("usertable", "user6284781860667377211", "a",
      "with space", "quote\"d", "back\\slash", "tab\there", "new\nline", "nul\u0000",
      "unit\u001fsep", "del\u007f", "é accent", "日本", "emoji \uD83D\uDE00", "slash/less",
      "<html>&'", "~!@#$%^*()_+-={}[]|:;,.?`");

  @Test
  void namesAreQuotedAsJacksonQuotesThem() {
    for (String name : NAMES) {
      assertArrayEquals(Json.writeBytes(Json.NODES.textNode(name)), RequestSupport.quoted(name),
          name);
    }
  }

  @Test
  void anEntityReadIsAnsweredWithTheBytesOfItsTree() {
    byte[] state = "{\"field0\":\"x\\\"y\",\"n\":[1,2]}".getBytes(StandardCharsets.UTF_8);
    for (String name : NAMES) {
      if (name.contains("/") || name.chars().anyMatch(Character::isISOControl)) {
        continue; // not a valid type or id
      }
      EntityId entity = new EntityId("T" + name.replace(' ', '_'), name);
      ObjectNode tree = Json.NODES.objectNode();
      tree.put("type", entity.type());
      tree.put("id", entity.id());
      tree.set("state", Json.parse(state));
      tree.put("version", 1234567890123456789L);
      assertArrayEquals(Json.writeBytes(tree),
          RequestSupport.entityBody(entity, state, 1234567890123456789L), name);
    }
  }
}
