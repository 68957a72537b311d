package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The query of a page read newest first: defaults, bounds, and every bad parameter refused. */
class PageQueryTest {
  private static final PageQuery.Bounds BOUNDS = new PageQuery.Bounds(100, 1000, "troupe.versions");

  private static PageQuery parse(Map<String, String> parameters) {
    return PageQuery.parse(name -> Optional.ofNullable(parameters.get(name)), BOUNDS);
  }

  @Test
  void defaultsAndGivenValues() {
    assertEquals(new PageQuery(null, 100), parse(Map.of()));
    assertEquals(new PageQuery(42L, 1), parse(Map.of("before", "42", "limit", "1")));
    assertEquals(new PageQuery(Long.MAX_VALUE, 1000),
        parse(Map.of("before", Long.toString(Long.MAX_VALUE), "limit", "1000")));
  }

  @Test
  void badParametersAreInvalidRequests() {
    for (Map<String, String> bad : new Map[] {Map.of("limit", "0"), Map.of("limit", "1001"),
        Map.of("limit", "ten"), Map.of("limit", ""), Map.of("before", "0"),
        Map.of("before", "-5"), Map.of("before", "soon"), Map.of("before", ""),
        Map.of("before", "99999999999999999999")}) {
      TroupeException refused = assertThrows(TroupeException.class, () -> parse(bad),
          bad.toString());
      assertEquals(ErrorCode.INVALID_REQUEST, refused.code(), bad.toString());
    }
    TroupeException tooMany = assertThrows(TroupeException.class,
        () -> parse(Map.of("limit", "5000")));
    assertTrue(tooMany.getMessage().contains("troupe.versions.max-limit"), tooMany.getMessage());
  }

  @Test
  void boundsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> new PageQuery.Bounds(0, 10, "s"));
    assertThrows(IllegalArgumentException.class, () -> new PageQuery.Bounds(20, 10, "s"));
  }
}
