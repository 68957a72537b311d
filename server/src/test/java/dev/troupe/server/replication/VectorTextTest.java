package dev.troupe.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DependencyVector;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The header text of dependency vectors: a round trip, and strict refusal of anything else. */
class VectorTextTest {
  @Test
  void fixedForm() {
    DependencyVector vector = DependencyVector.of(Map.of(2010173930, 7301553610012475392L,
        1044060291, 7301553612838649856L));
    String text = "1044060291:7301553612838649856,2010173930:7301553610012475392";
    assertEquals(text, VectorText.encode(vector));
    assertEquals(vector, VectorText.parse(text, "t"));
    assertEquals("", VectorText.encode(DependencyVector.EMPTY));
    assertEquals(DependencyVector.EMPTY, VectorText.parse("", "t"));
  }

  @Property(tries = 200)
  void roundTrip(@ForAll @Size(max = 8) Map<@IntRange(min = 1) Integer,
      @LongRange(min = 1) Long> entries) {
    DependencyVector vector = DependencyVector.of(entries);
    assertEquals(vector, VectorText.parse(VectorText.encode(vector), "t"));
  }

  @Test
  void malformedTextIsAnInvalidRequest() {
    for (String bad : new String[] {",", "1", "1:", ":5", "1:5,", ",1:5", "1:5,1:6", "2:5,1:6",
        "0:5", "1:0", "-1:5", "1:-5", "+1:5", "01:5", "1:05", " 1:5", "1:5 ", "1:5;2:6",
        "2147483648:5", "1:9223372036854775808", "1:99999999999999999999", "a:b", "1:5:6",
        "1:5,,2:6"}) {
      TroupeException error =
          assertThrows(TroupeException.class, () -> VectorText.parse(bad, "token"), bad);
      assertEquals(ErrorCode.INVALID_REQUEST, error.code(), bad);
    }
    StringBuilder many = new StringBuilder();
    for (int id = 1; id <= VectorText.MAX_ENTRIES + 1; id++) {
      many.append(id == 1 ? "" : ",").append(id).append(":1");
    }
    assertThrows(TroupeException.class, () -> VectorText.parse(many.toString(), "token"));
    assertThrows(TroupeException.class,
        () -> VectorText.parse("1:1".repeat(VectorText.MAX_LENGTH), "token"));
  }
}
