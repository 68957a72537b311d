package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/**
 * One API operation: its request, how safe it is to repeat, and how its successful answer becomes
 * a result. Built by {@link Calls}, run by {@link ClientCore} for either face.
 *
 * @param path the path, segments already percent-encoded
 * @param query parameters (not encoded), in order; a name may repeat ({@code key} of a projection)
 * @param body the request body (null: none)
 * @param reader from the answer's JSON body (a missing node when empty) and whether the answer
 *     was replayed ({@code Idempotent-Replayed: true}) to the result
 */
record Call<T>(String method, String path, List<Map.Entry<String, String>> query, byte[] body,
    String contentType, Safety safety, Reader<T> reader) {
  /** Parameters named once each, in the map's order. */
  static List<Map.Entry<String, String>> parameters(Map<String, String> named) {
    return named.entrySet().stream()
        .map(entry -> Map.entry(entry.getKey(), entry.getValue())).toList();
  }

  /** Reads a successful answer. */
  @FunctionalInterface
  interface Reader<T> {
    T read(JsonNode body, boolean replayed);
  }
}
