package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A registered dependency.
 *
 * @param kind {@code update} or {@code delete}
 * @param function only for {@code update}: the function applied to the follower
 * @param contribution when read as a dependency an entity follows: the leader's last forwarded
 *     value to an aggregate
 * @param txId the transaction that registered it (only in the answer to a registration)
 */
public record Dependency(String id, String kind, KeyReference leader, KeyReference follower,
    Optional<String> function, Optional<JsonNode> contribution, OptionalLong txId) {
  static Dependency from(JsonNode body) {
    JsonNode function = body.get("function");
    JsonNode contribution = body.get("contribution");
    return new Dependency(Wire.text(body, "id"), Wire.text(body, "kind"),
        KeyReference.from(Wire.required(body, "leader")),
        KeyReference.from(Wire.required(body, "follower")),
        function == null || function.isNull() ? Optional.empty() : Optional.of(function.asText()),
        Optional.ofNullable(contribution), Wire.optionalNumber(body, "txId"));
  }
}
