package dev.troupe.storage;

/**
 * A point of one partition's journal: a sequence number and the commit timestamp of the last record
 * before it. Persisted in the {@code meta} column family to mark completed checkpoint rounds and the
 * truncation horizon.
 *
 * @param sequence the first sequence number not covered (records {@code < sequence} are covered)
 * @param timestamp the greatest commit timestamp of the covered records (the round's frontier)
 */
record JournalPosition(long sequence, long timestamp) {
  static final JournalPosition START = new JournalPosition(0, 0);
}
