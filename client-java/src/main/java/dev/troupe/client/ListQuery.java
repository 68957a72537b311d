package dev.troupe.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which page of a type's entities to list ({@code GET /v1/entities/{type}}): after a cursor or
 * from an id on, at most a limit, as of a version, with or without states. Immutable; start from
 * {@link #firstPage()} and chain: {@code ListQuery.firstPage().limit(100).withStates()}.
 *
 * @param after list the ids after this one (a previous page's {@link EntityPage#next}); null: from
 *     the start
 * @param from list from this id on, inclusive (a range scan); null: from the start. Not with
 *     {@code after}
 * @param limit at most this many entities (null: the server's default; above the server's {@code
 *     troupe.listing.max-limit} is refused)
 * @param at list as of this version (every page at one version is a consistent cut); null: now
 * @param states include each entity's state
 */
public record ListQuery(String after, String from, Integer limit, Long at, boolean states) {
  private static final ListQuery FIRST = new ListQuery(null, null, null, null, false);

  /** The first page, the server's default limit, now, without states. */
  public static ListQuery firstPage() {
    return FIRST;
  }

  /** This query with {@link #after} set. */
  public ListQuery after(String cursor) {
    return new ListQuery(cursor, from, limit, at, states);
  }

  /** This query with {@link #from} set. */
  public ListQuery from(String firstId) {
    return new ListQuery(after, firstId, limit, at, states);
  }

  /** This query with {@link #limit} set. */
  public ListQuery limit(int most) {
    return new ListQuery(after, from, most, at, states);
  }

  /** This query with {@link #at} set. */
  public ListQuery at(long version) {
    return new ListQuery(after, from, limit, version, states);
  }

  /** This query asking for states. */
  public ListQuery withStates() {
    return new ListQuery(after, from, limit, at, true);
  }

  Map<String, String> parameters() {
    Map<String, String> parameters = new LinkedHashMap<>();
    if (after != null) {
      parameters.put("after", after);
    }
    if (from != null) {
      parameters.put("from", from);
    }
    if (limit != null) {
      parameters.put("limit", Integer.toString(limit));
    }
    if (at != null) {
      parameters.put("at", Long.toString(at));
    }
    if (states) {
      parameters.put("states", "true");
    }
    return parameters;
  }
}
