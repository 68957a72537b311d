package dev.troupe.server.http;

import com.typesafe.config.Config;

/**
 * {@code troupe.idempotency}: how long and how many {@code Idempotency-Key}s are remembered
 * (reference.conf documents each).
 *
 * @param retentionMillis how long after its first attempt a key is answered from its record
 * @param maxKeys most keys remembered at once; a new key beyond evicts the oldest remembered one
 * @param maxAnswerBytes largest answer body stored with a key; a larger one is rebuilt on replay
 * @param maxAnswersPerWrite most answers stored in one storage write
 * @param pruneIntervalMillis how often expired keys are deleted from storage
 * @param haltAfterCommitForTests tests only: halt the process right after an idempotent write
 *     committed, before its answer is recorded or sent
 */
public record IdempotencySettings(long retentionMillis, int maxKeys, int maxAnswerBytes,
    int maxAnswersPerWrite, long pruneIntervalMillis, boolean haltAfterCommitForTests) {

  public static IdempotencySettings fromConfig(Config config) {
    Config idempotency = config.getConfig("troupe.idempotency");
    IdempotencySettings settings = new IdempotencySettings(
        idempotency.getLong("retention-millis"),
        idempotency.getInt("max-keys"),
        idempotency.getInt("max-answer-bytes"),
        idempotency.getInt("max-answers-per-write"),
        idempotency.getLong("prune-interval-millis"),
        idempotency.getBoolean("testing.halt-after-commit"));
    if (settings.retentionMillis < 1 || settings.maxKeys < 1 || settings.maxAnswerBytes < 0
        || settings.maxAnswersPerWrite < 1 || settings.pruneIntervalMillis < 1) {
      throw new IllegalArgumentException("troupe.idempotency: retention-millis, max-keys,"
          + " max-answers-per-write and prune-interval-millis must be positive, max-answer-bytes"
          + " not negative: " + settings);
    }
    return settings;
  }
}
