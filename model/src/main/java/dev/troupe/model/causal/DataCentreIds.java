package dev.troupe.model.causal;

import dev.troupe.model.Invariants;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * Names and numeric ids of data centres (DCs). A DC is named by its operator ({@code serve --dc
 * NAME}); everything stored or sent names it by a number derived from the name, the same in every
 * DC without coordination: the CRC32C of the name's UTF-8 bytes, as a positive 31-bit integer.
 * That number is the origin DC of every record a DC commits, the entry of dependency vectors and
 * causal tokens, and the tie-break of registers (last writer wins on (timestamp, DC id)), so all
 * DCs order concurrent writes the same way. Id 0 is reserved for a node with no DC name (a single
 * DC that replicates nowhere, and everything written before DCs existed). Two names with one id
 * are refused when the DCs first connect (a collision among a handful of names is about one in
 * 10^8).
 */
public final class DataCentreIds {
  /** The id of a node started without a DC name. */
  public static final int UNNAMED = 0;

  /** What a DC name may be: 1–63 characters, letters, digits, '-', '_' and '.'. */
  public static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

  private DataCentreIds() {}

  /** Whether {@code name} is a valid DC name. */
  public static boolean isValidName(String name) {
    return name != null && NAME.matcher(name).matches();
  }

  /** The id of the DC named {@code name}: positive, stable across versions and machines. */
  public static int of(String name) {
    Invariants.check(isValidName(name), "invalid data centre name %s", name);
    CRC32C crc = new CRC32C();
    crc.update(name.getBytes(StandardCharsets.UTF_8));
    int id = (int) (crc.getValue() & 0x7FFF_FFFFL);
    return id == UNNAMED ? 1 : id;
  }
}
