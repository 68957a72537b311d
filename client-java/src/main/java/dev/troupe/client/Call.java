package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * One API operation: its request, how safe it is to repeat, and how its successful answer becomes
 * a result. Built by {@link Calls}, run by {@link ClientCore} for either face.
 *
 * @param path the path, segments already percent-encoded
 * @param query parameters (not encoded), in order
 * @param body the request body (null: none)
 * @param reader from the answer's JSON body (a missing node when empty) and whether the answer
 *     was replayed ({@code Idempotent-Replayed: true}) to the result
 */
record Call<T>(String method, String path, Map<String, String> query, byte[] body,
    String contentType, Safety safety, Reader<T> reader) {
  /** Reads a successful answer. */
  @FunctionalInterface
  interface Reader<T> {
    T read(JsonNode body, boolean replayed);
  }
}
