package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.Arrays;

/**
 * What the store remembers of one idempotent write (an {@code Idempotency-Key}): written in the
 * same atomic write as the write itself (a single turn's journal record, or a transaction's commit
 * decision), so after any crash the record exists exactly when the write committed.
 *
 * <ul>
 *   <li>{@code qualifiedKey}: the key's identity, {@code namespace + "\u0000" + key} (the
 *       namespace is the client's token's name, empty without tokens), at most {@link #MAX_KEY_BYTES} UTF-8 bytes.
 *   <li>{@code fingerprint}: SHA-256 of the request (method, path, body), 32 bytes.
 *   <li>{@code recordedAtMillis}: wall-clock time of the first attempt, for expiry.
 *   <li>{@code entity} and {@code commitTimestamp}: for a single turn, the entity and the commit
 *       timestamp the writer gave its record (0 until written), enough to rebuild the answer.
 *   <li>{@code transactionId}: the transaction whose decision carried it (0 for a single turn).
 *   <li>{@code answerStatus}/{@code answerBody}: the answer the first attempt gave, recorded after
 *       the write (status 0 and an empty body until then).
 * </ul>
 *
 * <p>Persisted by {@link Codec} (record type {@code IDEMPOTENCY_RECORD}, format revision 1) under
 * {@link Keys#idempotency} in the transactions column family.
 */
public record IdempotencyRecord(
    String qualifiedKey,
    byte[] fingerprint,
    long recordedAtMillis,
    EntityId entity,
    long commitTimestamp,
    long transactionId,
    int answerStatus,
    byte[] answerBody) {
  public static final int FINGERPRINT_BYTES = 32;
  public static final int MAX_KEY_BYTES = 1024;

  public IdempotencyRecord {
    Invariants.check(fingerprint != null && fingerprint.length == FINGERPRINT_BYTES,
        "an idempotency fingerprint has %d bytes", FINGERPRINT_BYTES);
    Invariants.check(qualifiedKey != null && !qualifiedKey.isEmpty(), "an idempotency key is set");
    answerBody = answerBody == null ? new byte[0] : answerBody;
  }

  /** A record before its write: nothing committed, no answer. */
  public static IdempotencyRecord pending(String qualifiedKey, byte[] fingerprint,
      long recordedAtMillis) {
    return new IdempotencyRecord(qualifiedKey, fingerprint, recordedAtMillis, null, 0, 0, 0, null);
  }

  public IdempotencyRecord committedAt(EntityId committedEntity, long timestamp) {
    return new IdempotencyRecord(qualifiedKey, fingerprint, recordedAtMillis, committedEntity,
        timestamp, transactionId, answerStatus, answerBody);
  }

  public IdempotencyRecord decidedAs(long decidedTransactionId) {
    return new IdempotencyRecord(qualifiedKey, fingerprint, recordedAtMillis, entity,
        commitTimestamp, decidedTransactionId, answerStatus, answerBody);
  }

  public IdempotencyRecord withAnswer(int status, byte[] body) {
    return new IdempotencyRecord(qualifiedKey, fingerprint, recordedAtMillis, entity,
        commitTimestamp, transactionId, status, body);
  }

  public boolean hasAnswer() {
    return answerStatus != 0;
  }

  public byte[] fingerprint() {
    return fingerprint.clone();
  }

  public byte[] answerBody() {
    return answerBody.clone();
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof IdempotencyRecord that && qualifiedKey.equals(that.qualifiedKey)
        && Arrays.equals(fingerprint, that.fingerprint)
        && recordedAtMillis == that.recordedAtMillis
        && java.util.Objects.equals(entity, that.entity)
        && commitTimestamp == that.commitTimestamp && transactionId == that.transactionId
        && answerStatus == that.answerStatus && Arrays.equals(answerBody, that.answerBody);
  }

  @Override
  public int hashCode() {
    return qualifiedKey.hashCode() * 31 + Arrays.hashCode(fingerprint);
  }
}
