package dev.troupe.model.value;

/**
 * Unique identity of one OR-set addition: the data centre and transaction that made it and the
 * operation's index within that transaction. Unique because transaction ids are unique per data
 * centre.
 */
public record Tag(int originDc, long transactionId, int index) {}
