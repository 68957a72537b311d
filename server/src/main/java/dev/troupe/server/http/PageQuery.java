package dev.troupe.server.http;

import com.typesafe.config.Config;
import dev.troupe.model.TroupeException;
import java.util.Optional;
import java.util.function.Function;

/**
 * The query of a page read newest first ({@code ?before=CURSOR&limit=N}): an entity's versions
 * ({@code GET /v1/entities/{type}/{id}/versions}, the cursor a version) and the recent
 * transactions ({@code GET /v1/transactions/recent}, the cursor a sequence number). Parsed and
 * checked before anything is read; a pure function of the parameters and the bounds.
 *
 * @param before the page holds only items below it; null: from the newest
 * @param limit most items in the page: {@code limit}, or the bounds' default
 */
public record PageQuery(Long before, int limit) {

  /**
   * A route's bounds on a page.
   *
   * @param defaultLimit items in a page when the request names no limit
   * @param maxLimit most items a request may ask for
   * @param section the settings' section, for messages ({@code troupe.versions})
   */
  public record Bounds(int defaultLimit, int maxLimit, String section) {
    public Bounds {
      if (defaultLimit < 1 || maxLimit < defaultLimit) {
        throw new IllegalArgumentException(section + ": need 1 <= default-limit <= max-limit, was "
            + defaultLimit + ", " + maxLimit);
      }
    }

    /** Parses {@code default-limit} and {@code max-limit} of {@code section} of {@code config}. */
    public static Bounds fromConfig(Config config, String section) {
      Config bounds = config.getConfig(section);
      return new Bounds(bounds.getInt("default-limit"), bounds.getInt("max-limit"), section);
    }
  }

  /**
   * Parses the parameters {@code parameter} answers (a URL query's values, decoded).
   *
   * @throws TroupeException {@code invalid_request} for a limit outside 1..{@code max-limit} or not
   *     an integer, or a cursor that is not a positive integer
   */
  public static PageQuery parse(Function<String, Optional<String>> parameter, Bounds bounds) {
    int limit = bounds.defaultLimit();
    Optional<String> limitText = parameter.apply("limit");
    if (limitText.isPresent()) {
      try {
        limit = Integer.parseInt(limitText.get());
      } catch (NumberFormatException e) {
        throw TroupeException.invalid("'limit' must be an integer from 1 to " + bounds.maxLimit()
            + ", was '" + limitText.get() + "'");
      }
      if (limit < 1 || limit > bounds.maxLimit()) {
        throw TroupeException.invalid("'limit' must be from 1 to " + bounds.maxLimit() + " ("
            + bounds.section() + ".max-limit), was " + limit);
      }
    }
    Long before = null;
    Optional<String> beforeText = parameter.apply("before");
    if (beforeText.isPresent()) {
      try {
        before = Long.parseLong(beforeText.get());
      } catch (NumberFormatException e) {
        throw TroupeException.invalid("'before' must be a cursor (a positive integer: the 'next'"
            + " of the previous page), was '" + beforeText.get() + "'");
      }
      if (before < 1) {
        throw TroupeException.invalid("'before' must be a positive integer, was " + before);
      }
    }
    return new PageQuery(before, limit);
  }
}
