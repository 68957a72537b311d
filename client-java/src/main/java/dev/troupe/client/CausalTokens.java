package dev.troupe.client;

import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The causal token a client holds: the newest the server sent ({@code Troupe-Causal-Token}),
 * merged per data centre, sent with every later request so the session's reads see its own
 * writes in any data centre.
 *
 * <p>Concurrency: shared by the blocking and the asynchronous face and by every thread using
 * them; a merge is a compare-and-set loop, so answers arriving out of order never move a data
 * centre's timestamp back.
 */
final class CausalTokens {
  private final AtomicReference<String> held;

  CausalTokens(String initial) {
    held = new AtomicReference<>(initial == null || initial.isBlank() ? null : initial);
  }

  Optional<String> current() {
    return Optional.ofNullable(held.get());
  }

  void received(String token) {
    if (token != null && !token.isBlank()) {
      held.updateAndGet(old -> merge(old, token));
    }
  }

  /**
   * The per-data-centre maximum of two tokens ({@code <dc id>:<timestamp>} pairs, comma-separated,
   * ids ascending). A token this client cannot parse replaces the held one: the server merged the
   * request's token into it.
   */
  static String merge(String held, String received) {
    if (held == null) {
      return received;
    }
    TreeMap<Long, Long> merged = new TreeMap<>();
    try {
      for (String token : new String[] {held, received}) {
        for (String pair : token.split(",")) {
          if (pair.isEmpty()) {
            continue;
          }
          int colon = pair.indexOf(':');
          if (colon < 0) {
            return received;
          }
          long dataCentre = Long.parseLong(pair.substring(0, colon));
          long timestamp = Long.parseLong(pair.substring(colon + 1));
          merged.merge(dataCentre, timestamp, Math::max);
        }
      }
    } catch (NumberFormatException unreadable) {
      return received;
    }
    StringBuilder text = new StringBuilder();
    merged.forEach((dataCentre, timestamp) -> {
      if (!text.isEmpty()) {
        text.append(',');
      }
      text.append(dataCentre).append(':').append(timestamp);
    });
    return text.toString();
  }
}
