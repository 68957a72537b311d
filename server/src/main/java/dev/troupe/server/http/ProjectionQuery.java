package dev.troupe.server.http;

import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.StateProjection;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.Query;
import org.apache.pekko.japi.Pair;

/**
 * The projection a request asks for ({@link StateProjection}), from its query, parsed and checked
 * before anything is read or written, the same for Troupe ({@link RestApi}) and the PostgreSQL
 * baseline ({@link PostgresRestApi}). A pure function of the query and the settings.
 *
 * <ul>
 *   <li>{@code key=K}, repeated: the keys to answer, in order (each one key name, so a name may
 *       hold any character a key may, commas included; percent-encode as any query value);
 *   <li>{@code state=none}: no key at all ({@code "state": {}}), e.g. for a writer that needs
 *       only the version;
 *   <li>neither: the whole state, as before projections existed.
 * </ul>
 *
 * <p>Refused with {@code invalid_request}: a key breaking a key name's rules ({@code
 * max-key-length}, no control characters, no leading {@code $}), a key named twice, more than
 * {@code troupe.http.max-projection-keys} keys, {@code state} other than {@code none}, and
 * {@code state=none} with keys.
 */
final class ProjectionQuery {
  static final String KEY_PARAMETER = "key";
  static final String STATE_PARAMETER = "state";
  static final String NO_STATE = "none";

  private ProjectionQuery() {}

  /** The projection {@code query} asks for; empty: the whole state. */
  static Optional<StateProjection> parse(Query query, HttpSettings settings) {
    return parse(query.toList(), settings.maxKeyLength(), settings.maxProjectionKeys());
  }

  static Optional<StateProjection> parse(List<Pair<String, String>> parameters,
      int maxKeyLength, int maxKeys) {
    List<String> keys = new ArrayList<>();
    Optional<String> state = Optional.empty();
    for (Pair<String, String> parameter : parameters) {
      if (parameter.first().equals(STATE_PARAMETER)) {
        if (state.isPresent()) {
          throw TroupeException.invalid("'state' is given twice");
        }
        state = Optional.of(parameter.second());
      } else if (parameter.first().equals(KEY_PARAMETER)) {
        if (keys.size() == maxKeys) {
          throw TroupeException.invalid("a projection names at most " + maxKeys
              + " keys (troupe.http.max-projection-keys); read the whole state instead");
        }
        try {
          keys.add(RequestSupport.checkKey(parameter.second(), maxKeyLength));
        } catch (TroupeException badKey) {
          throw TroupeException.invalid("'key' number " + (keys.size() + 1) + ": "
              + badKey.getMessage());
        }
      }
    }
    if (state.isPresent()) {
      if (!state.get().equals(NO_STATE)) {
        throw TroupeException.invalid("'state' must be 'none' (answer no key), was '"
            + state.get() + "'; name keys with 'key' instead");
      }
      if (!keys.isEmpty()) {
        throw TroupeException.invalid("give 'state=none' (no key) or 'key' parameters, not both");
      }
      return Optional.of(StateProjection.NONE);
    }
    return keys.isEmpty() ? Optional.empty() : Optional.of(new StateProjection(keys));
  }
}
