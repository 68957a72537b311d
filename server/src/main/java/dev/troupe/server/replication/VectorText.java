package dev.troupe.server.replication;

import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DependencyVector;
import java.util.Map;
import java.util.TreeMap;

/**
 * The text form of a {@link DependencyVector} in HTTP headers: the causal token a client carries
 * ({@code Troupe-Causal-Token}) and the received vector a pulling peer reports ({@code
 * Troupe-Received-Vector}).
 *
 * <p>Format: {@code <dc id>:<timestamp>} pairs in decimal, separated by commas, in ascending DC id
 * order, e.g. {@code 1044060291:7301553612838649856,2010173930:7301553610012475392}. The empty
 * vector is the empty string. Decimal rather than base64 of a binary form: a token is read by
 * operators next to the timestamps of {@code /metrics} and {@code troupe status}, and three DCs'
 * token is still under 100 characters.
 *
 * <p>Parsing is strict, so that a token means exactly one vector and a damaged one is noticed:
 * ids positive 31-bit integers, strictly ascending; timestamps positive 64-bit integers (a 0 entry
 * is written by leaving it out); no signs, spaces, leading zeros or empty pairs; at most {@link
 * #MAX_ENTRIES} entries. Anything else is {@code 400 invalid_request}.
 */
public final class VectorText {
  /** Most entries a vector may have in a header: far more DCs than anyone runs. */
  public static final int MAX_ENTRIES = 64;
  /** Longest text accepted: {@link #MAX_ENTRIES} pairs of the longest numbers and separators. */
  public static final int MAX_LENGTH = MAX_ENTRIES * (10 + 1 + 19 + 1);

  private VectorText() {}

  /** The text form of {@code vector}. */
  public static String encode(DependencyVector vector) {
    StringBuilder text = new StringBuilder(vector.entries().size() * 31);
    for (Map.Entry<Integer, Long> entry : vector.entries().entrySet()) {
      if (!text.isEmpty()) {
        text.append(',');
      }
      text.append(entry.getKey().intValue()).append(':').append(entry.getValue().longValue());
    }
    return text.toString();
  }

  /**
   * The vector {@code text} encodes.
   *
   * @param where what the text is, for the message (e.g. the header's name)
   * @throws TroupeException {@code invalid_request} when {@code text} is not a vector's text form
   */
  public static DependencyVector parse(String text, String where) {
    if (text.length() > MAX_LENGTH) {
      throw invalid(where, "is longer than " + MAX_LENGTH + " characters");
    }
    TreeMap<Integer, Long> entries = new TreeMap<>();
    if (text.isEmpty()) {
      return DependencyVector.EMPTY;
    }
    int previous = 0;
    for (String pair : text.split(",", -1)) {
      int colon = pair.indexOf(':');
      if (colon < 0) {
        throw invalid(where, "has a pair without ':' ('" + pair + "')");
      }
      long id = number(pair.substring(0, colon), Integer.MAX_VALUE, where);
      long timestamp = number(pair.substring(colon + 1), Long.MAX_VALUE, where);
      if (id <= previous) {
        throw invalid(where, "lists data centre ids out of ascending order or twice (" + id + ")");
      }
      previous = (int) id;
      entries.put((int) id, timestamp);
      if (entries.size() > MAX_ENTRIES) {
        throw invalid(where, "has more than " + MAX_ENTRIES + " entries");
      }
    }
    return new DependencyVector(entries);
  }

  /** A positive decimal number at most {@code max}, without sign or leading zeros. */
  private static long number(String digits, long max, String where) {
    if (digits.isEmpty() || digits.length() > 19 || digits.charAt(0) == '0') {
      throw invalid(where, "has '" + digits + "' where a positive decimal number belongs");
    }
    for (int i = 0; i < digits.length(); i++) {
      char c = digits.charAt(i);
      if (c < '0' || c > '9') {
        throw invalid(where, "has '" + digits + "' where a positive decimal number belongs");
      }
    }
    long value;
    try {
      value = Long.parseLong(digits);
    } catch (NumberFormatException tooLarge) {
      throw invalid(where, "has " + digits + ", above " + max);
    }
    if (value > max) {
      throw invalid(where, "has " + digits + ", above " + max);
    }
    return value;
  }

  private static TroupeException invalid(String where, String problem) {
    return TroupeException.invalid(where + " " + problem
        + "; expected '<dc id>:<timestamp>' pairs, comma-separated, ids ascending"
        + " (docs/ARCHITECTURE.md, \"Between data centres over HTTP\")");
  }
}
