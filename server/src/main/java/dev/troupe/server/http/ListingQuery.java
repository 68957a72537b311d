package dev.troupe.server.http;

import dev.troupe.model.TroupeException;
import dev.troupe.runtime.RuntimeSettings;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * The query of a listing ({@code GET /v1/entities/{type}}), parsed and checked before anything is
 * read, the same for Troupe ({@link RestApi}) and the PostgreSQL baseline ({@link
 * PostgresRestApi}). A pure function of the parameters and the settings.
 *
 * @param start the cursor ({@code after}: the page holds the ids after it) or the start of a range
 *     ({@code from}: the page holds it, if it exists, and the ids after it); empty: from the first
 * @param includeStart whether {@code start} came as {@code from}
 * @param limit most entities in the page: {@code limit}, or {@code troupe.listing.default-limit}
 * @param at the version to list as of ({@code at}); empty: the latest states
 * @param withStates whether each entity's state is in the page ({@code states=true})
 */
public record ListingQuery(Optional<String> start, boolean includeStart, int limit,
    OptionalLong at, boolean withStates) {

  /**
   * Parses the parameters {@code parameter} answers (a URL query's values, decoded).
   *
   * @throws TroupeException {@code invalid_request} for a limit outside 1..{@code max-limit} or not
   *     an integer, both {@code after} and {@code from}, an empty one, a version that is not a
   *     non-negative integer, or {@code states} other than {@code true} or {@code false}
   */
  public static ListingQuery parse(Function<String, Optional<String>> parameter,
      RuntimeSettings.ListingSettings settings) {
    Optional<String> after = parameter.apply("after");
    Optional<String> from = parameter.apply("from");
    if (after.isPresent() && from.isPresent()) {
      throw TroupeException.invalid("give 'after' (a cursor) or 'from' (the start of a range),"
          + " not both");
    }
    for (Optional<String> start : java.util.List.of(after, from)) {
      if (start.isPresent() && start.get().isEmpty()) {
        throw TroupeException.invalid("'after' and 'from' must be entity ids, not empty");
      }
    }
    int limit = settings.defaultLimit();
    Optional<String> limitText = parameter.apply("limit");
    if (limitText.isPresent()) {
      try {
        limit = Integer.parseInt(limitText.get());
      } catch (NumberFormatException e) {
        throw TroupeException.invalid("'limit' must be an integer from 1 to "
            + settings.maxLimit() + ", was '" + limitText.get() + "'");
      }
      if (limit < 1 || limit > settings.maxLimit()) {
        throw TroupeException.invalid("'limit' must be from 1 to " + settings.maxLimit()
            + " (troupe.listing.max-limit), was " + limit);
      }
    }
    OptionalLong at = OptionalLong.empty();
    Optional<String> atText = parameter.apply("at");
    if (atText.isPresent()) {
      long version;
      try {
        version = Long.parseLong(atText.get());
      } catch (NumberFormatException e) {
        throw TroupeException.invalid("'at' must be a version (an integer), was '"
            + atText.get() + "'");
      }
      if (version < 0) {
        throw TroupeException.invalid("'at' must be a non-negative version, was " + version);
      }
      at = OptionalLong.of(version);
    }
    boolean withStates = switch (parameter.apply("states").orElse("false")) {
      case "true" -> true;
      case "false" -> false;
      default -> throw TroupeException.invalid("'states' must be true or false");
    };
    return new ListingQuery(from.isPresent() ? from : after, from.isPresent(), limit, at,
        withStates);
  }
}
