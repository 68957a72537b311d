package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.OptionalLong;

/**
 * An entity's versions still in the server's journal, newest first; each is readable with {@link
 * TroupeClient#get(String, String, long)}. {@code next} is the cursor of the following page (give
 * it as {@code before}), empty on the last page.
 *
 * @param entity the entity, {@code Type/id}
 */
public record EntityVersions(String entity, List<Long> versions, OptionalLong next) {
  static EntityVersions from(JsonNode body) {
    return new EntityVersions(body.path("entity").asText(""),
        Wire.list(body, "versions", JsonNode::asLong), Wire.optionalNumber(body, "next"));
  }
}
