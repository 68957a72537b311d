package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.EntityListing;
import dev.troupe.runtime.RuntimeSettings;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The listing's query parsing and its answer's bytes, without a server. */
class ListingQueryTest {
  private static final RuntimeSettings.ListingSettings SETTINGS =
      new RuntimeSettings.ListingSettings(10, 50, 60, 4);

  private static ListingQuery parse(Map<String, String> parameters) {
    return ListingQuery.parse(name -> Optional.ofNullable(parameters.get(name)), SETTINGS);
  }

  @Test
  void defaultsAndEveryParameter() {
    assertEquals(new ListingQuery(Optional.empty(), false, 10, OptionalLong.empty(), false),
        parse(Map.of()));
    assertEquals(new ListingQuery(Optional.of("x y"), false, 50, OptionalLong.of(7), true),
        parse(Map.of("after", "x y", "limit", "50", "at", "7", "states", "true")));
    assertEquals(new ListingQuery(Optional.of("b"), true, 1, OptionalLong.empty(), false),
        parse(Map.of("from", "b", "limit", "1", "states", "false")));
  }

  @Test
  void badParametersAreInvalidRequests() {
    for (Map<String, String> bad : List.of(Map.of("limit", "0"), Map.of("limit", "51"),
        Map.of("limit", "-3"), Map.of("limit", "1.5"), Map.of("limit", ""),
        Map.of("limit", "99999999999"), Map.of("after", ""), Map.of("from", ""),
        Map.of("after", "a", "from", "b"), Map.of("at", "-1"), Map.of("at", "x"),
        Map.of("states", "yes"), Map.of("states", ""))) {
      TroupeException refused = assertThrows(TroupeException.class, () -> parse(bad),
          bad.toString());
      assertEquals(ErrorCode.INVALID_REQUEST, refused.code(), bad.toString());
    }
  }

  @Test
  void theAnswerEmbedsStatesAsTheyAreAndEscapesIds() {
    EntityListing.Page page = new EntityListing.Page("T\"ype", List.of(
        new EntityListing.Entry("a \"quoted\" \u00e9 id", 5, null),
        new EntityListing.Entry("b", 9, "{\"k\":[1,\"v\"]}".getBytes(StandardCharsets.UTF_8))),
        "b");
    assertEquals(Json.parse("{\"type\":\"T\\\"ype\",\"entities\":[{\"id\":\"a \\\"quoted\\\" \u00e9"
            + " id\",\"version\":5},{\"id\":\"b\",\"version\":9,\"state\":{\"k\":[1,\"v\"]}}],"
            + "\"next\":\"b\"}"),
        Json.parse(RestApi.listingBody(page)));
    assertEquals(Json.parse("{\"type\":\"T\",\"entities\":[],\"next\":null}"),
        Json.parse(RestApi.listingBody(new EntityListing.Page("T", List.of(), null))));
  }
}
