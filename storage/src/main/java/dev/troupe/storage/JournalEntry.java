package dev.troupe.storage;

/**
 * One journal record as a reader of the journal meets it ({@link Store#readJournal}): where it is
 * (partition, sequence) and what it holds. Sequence order is commit-timestamp order within a
 * partition.
 */
public record JournalEntry(int partition, long sequence, TransactionRecord record) {}
