package dev.troupe.runtime.replication;

import com.typesafe.config.Config;

/**
 * {@code troupe.replication.bootstrap} (docs/ARCHITECTURE.md, "Bootstrapping a new data centre";
 * reference.conf documents each), parsed once.
 *
 * @param holdAfterMillis how long a DC that served a bootstrap image keeps its replication log
 *     above the image's start vector after the image ended (unless the new DC reports sooner, with
 *     a pull, that it received everything above it)
 * @param readPageEntities how many entity ids the serving DC reads per page of its store
 * @param maxFrameBytes the largest record the receiving DC accepts in an image (an entity's state)
 * @param readTimeoutMillis how long the receiving DC waits for the image's next bytes before it
 *     gives up (and starts over)
 * @param installBatchBytes the receiving DC writes installed states in batches of at most about
 *     this many bytes of image (or {@code readPageEntities} entities)
 */
public record BootstrapSettings(long holdAfterMillis, int readPageEntities, int maxFrameBytes,
    long readTimeoutMillis, long installBatchBytes) {

  public BootstrapSettings {
    if (holdAfterMillis < 0 || readPageEntities <= 0 || maxFrameBytes < 64
        || readTimeoutMillis <= 0 || installBatchBytes <= 0) {
      throw new IllegalArgumentException("troupe.replication.bootstrap: hold-after-millis >= 0,"
          + " read-page-entities > 0, max-frame-bytes >= 64, read-timeout-millis > 0,"
          + " install-batch-bytes > 0; was "
          + holdAfterMillis + ", " + readPageEntities + ", " + maxFrameBytes + ", "
          + readTimeoutMillis + ", " + installBatchBytes);
    }
  }

  public static final BootstrapSettings DEFAULTS =
      new BootstrapSettings(600_000, 256, 64 << 20, 60_000, 8 << 20);

  /** Parses {@code replication.bootstrap} of the {@code troupe} section. */
  public static BootstrapSettings fromConfig(Config troupe) {
    Config bootstrap = troupe.getConfig("replication.bootstrap");
    return new BootstrapSettings(bootstrap.getLong("hold-after-millis"),
        bootstrap.getInt("read-page-entities"), bootstrap.getInt("max-frame-bytes"),
        bootstrap.getLong("read-timeout-millis"), bootstrap.getLong("install-batch-bytes"));
  }
}
