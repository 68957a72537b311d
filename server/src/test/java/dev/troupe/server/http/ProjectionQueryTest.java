package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.StateProjection;
import java.util.List;
import java.util.Optional;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import org.apache.pekko.japi.Pair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The projection a query asks for ({@link ProjectionQuery}): a pure function of the query. */
class ProjectionQueryTest {
  /** The query's parameters, decoded (as Pekko's {@code Query.toList} gives them). */
  private static Optional<StateProjection> parse(String query) {
    List<Pair<String, String>> parameters = new ArrayList<>();
    for (String parameter : query.isEmpty() ? new String[0] : query.split("&")) {
      String[] pair = parameter.split("=", 2);
      parameters.add(Pair.create(URLDecoder.decode(pair[0], StandardCharsets.UTF_8),
          URLDecoder.decode(pair[1], StandardCharsets.UTF_8)));
    }
    return ProjectionQuery.parse(parameters, 16, 3);
  }

  @Test
  void keysAreTakenInOrderAndNoneMeansTheWholeState() {
    assertEquals(Optional.empty(), parse(""));
    assertEquals(Optional.empty(), parse("at=5&limit=2"));
    assertEquals(Optional.of(new StateProjection(List.of("savings[c17]", "checking[c17]"))),
        parse("key=savings%5Bc17%5D&at=5&key=checking[c17]"));
    // One key per parameter, so a name may hold a comma.
    assertEquals(Optional.of(new StateProjection(List.of("a,b", "c d"))),
        parse("key=a%2Cb&key=c%20d"));
    assertEquals(Optional.of(StateProjection.NONE), parse("state=none"));
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "key=                             | 'key' number 1: key must have 1 to 16 characters",
      "key=a&key=01234567890123456      | 'key' number 2: key must have 1 to 16 characters",
      "key=%24deps                      | reserved",
      "key=a%01                         | control characters",
      "key=a&key=b&key=a                | names key 'a' twice",
      "key=a&key=b&key=c&key=d          | at most 3 keys (troupe.http.max-projection-keys)",
      "state=all                        | 'state' must be 'none'",
      "state=none&state=none            | 'state' is given twice",
      "state=none&key=a                 | not both",
  })
  void badProjectionsAreInvalidRequests(String query, String expected) {
    TroupeException refused = assertThrows(TroupeException.class, () -> parse(query));
    assertEquals(ErrorCode.INVALID_REQUEST, refused.code());
    assertTrue(refused.getMessage().contains(expected), refused.getMessage());
  }
}
