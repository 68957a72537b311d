package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * A committed transaction. A replayed answer (the first attempt committed, its answer was lost)
 * is rebuilt from the server's record and carries only the transaction id: {@code entities} and
 * {@code reads} are empty and {@code replayed} is true.
 */
public record TransactionResult(long txId, List<EntityOutcome> entities, List<ReadOutcome> reads,
    boolean replayed) {
  static TransactionResult from(JsonNode body, boolean replayed) {
    return new TransactionResult(Wire.number(body, "txId"),
        Wire.list(body, "entities", EntityOutcome::from), Wire.list(body, "reads", ReadOutcome::from),
        replayed);
  }

  /** The read of {@code entity} ({@code Type/id}); NoSuchElementException if it was not read. */
  public ReadOutcome read(String entity) {
    return reads.stream().filter(read -> read.entity().equals(entity)).findFirst()
        .orElseThrow(() -> new NoSuchElementException("the transaction did not read " + entity));
  }
}
