package dev.troupe.model.value;

/**
 * The last-writer-wins order of register writes and deletions: a commit timestamp and the data
 * centre where it committed, compared timestamp first, then data centre id (unique per data centre,
 * so two distinct writes never compare equal unless they are operations of one record).
 *
 * <p>A tombstone's stamp is that of the deletion that left it (docs/ARCHITECTURE.md, "Deletes
 * across data centres").
 */
public record Stamp(long timestamp, int originDc) {
  /** Whether this stamp is strictly later than {@code other}. */
  public boolean isAfter(Stamp other) {
    return timestamp != other.timestamp ? timestamp > other.timestamp : originDc > other.originDc;
  }

  /** The later of two stamps; {@code other} may be null. */
  public Stamp latest(Stamp other) {
    return other == null || isAfter(other) ? this : other;
  }
}
