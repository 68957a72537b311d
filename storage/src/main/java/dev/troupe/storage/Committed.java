package dev.troupe.storage;

/** Receipt of a durable commit: the transaction and the commit timestamp it was given. */
public record Committed(long transactionId, long commitTimestamp) {}
