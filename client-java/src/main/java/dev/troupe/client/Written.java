package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The answer to a single write (a key, a patch, an action, a delete).
 *
 * @param version the write's commit timestamp; empty only in a replayed answer of a turn that ran
 *     as a transaction (which names its {@code txId} instead)
 * @param state the entity's state after the write, for the writes that answer one
 * @param txId the transaction the write ran as, when the answer names one
 * @param replayed the answer is the server's record of an earlier attempt with the same
 *     idempotency key (the first attempt committed and its answer was lost): the write ran once
 */
public record Written(OptionalLong version, Optional<ObjectNode> state, OptionalLong txId,
    boolean replayed) {
  static Written from(JsonNode body, boolean replayed) {
    return new Written(Wire.optionalNumber(body, "version"), Wire.optionalState(body, "state"),
        Wire.optionalNumber(body, "txId"), replayed);
  }
}
