package dev.troupe.replication;

/**
 * One pull a DC asks a peer for: the entries of {@code originDc}'s replication log after {@code
 * afterTimestamp} (this DC's received entry for that origin, so the answer's {@code upToTimestamp}
 * continues its received prefix).
 */
public record PullRequest(int originDc, long afterTimestamp) {}
