package dev.troupe.server.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.runtime.RecentTransactions;
import java.util.List;

/**
 * The JSON of the two routes the console reads its history from, as the OpenAPI document
 * describes them: an entity's versions and the recent transactions. Pure functions of what the
 * engine answered.
 */
final class ConsoleBodies {
  private ConsoleBodies() {}

  /**
   * {@code {"entity": "Type/id", "versions": [newest...], "next": cursor|null}}: {@code next} is
   * the last version listed when the page is full (an older one may follow), else null.
   */
  static ObjectNode versions(EntityId entity, List<Long> versions, int limit) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("entity", entity.toString());
    ArrayNode listed = body.putArray("versions");
    versions.forEach(listed::add);
    if (versions.size() == limit && !versions.isEmpty()) {
      body.put("next", versions.get(versions.size() - 1));
    } else {
      body.putNull("next");
    }
    return body;
  }

  /**
   * {@code {"transactions": [{"sequence", "txId", "kind", "outcome", "code", "reason",
   * "message", "entities", "entityCount", "version", "finishedAtMillis", "durationMicros"}],
   * "next": cursor|null}}, newest first; {@code outcome} is {@code committed}, {@code aborted}
   * or {@code failed}; {@code code}, {@code reason} and {@code message} are null when it
   * committed ({@code reason} also for another code than {@code aborted}).
   */
  static ObjectNode recentTransactions(RecentTransactions.Page page) {
    ObjectNode body = Json.NODES.objectNode();
    ArrayNode transactions = body.putArray("transactions");
    for (RecentTransactions.Outcome outcome : page.outcomes()) {
      ObjectNode node = transactions.addObject();
      node.put("sequence", outcome.sequence());
      node.put("txId", outcome.transactionId());
      node.put("kind", outcome.kind().label());
      node.put("outcome", outcome.committed() ? "committed"
          : "aborted".equals(outcome.code()) ? "aborted" : "failed");
      node.put("code", outcome.code());
      node.put("reason", outcome.reason());
      node.put("message", outcome.message());
      ArrayNode entities = node.putArray("entities");
      outcome.entities().forEach(entity -> entities.add(entity.toString()));
      node.put("entityCount", outcome.entityCount());
      node.put("version", outcome.version());
      node.put("finishedAtMillis", outcome.finishedAtMillis());
      node.put("durationMicros", outcome.durationMicros());
    }
    if (page.next() == null) {
      body.putNull("next");
    } else {
      body.put("next", page.next());
    }
    return body;
  }
}
