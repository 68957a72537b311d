package dev.troupe.runtime;

import com.typesafe.config.Config;
import dev.troupe.model.time.Clock;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.util.Locale;
import java.util.Objects;

/**
 * Which disk the store runs on ({@code troupe.storage.backend}): the embedded RocksDB in the data
 * directory (the default), or a PostgreSQL database ({@code troupe.storage.postgres}), which the
 * nodes of one data centre can share. The engine ({@link RocksStore}) is the same on both; only
 * its {@link dev.troupe.storage.KeyValueDisk} differs. Parsed once; immutable.
 *
 * @param postgres the database's settings; null for RocksDB
 */
public record StorageBackend(Kind kind, PostgresDiskSettings postgres) {
  /** The disks a node can run on. */
  public enum Kind {
    ROCKSDB,
    POSTGRES
  }

  public StorageBackend {
    Objects.requireNonNull(kind, "kind");
    if ((kind == Kind.POSTGRES) != (postgres != null)) {
      throw new IllegalArgumentException("PostgreSQL settings go with the postgres backend only");
    }
  }

  /**
   * {@code troupe.storage.backend} and, for {@code postgres}, {@code troupe.storage.postgres}.
   *
   * @param config the whole configuration (with its {@code troupe} section)
   * @throws IllegalArgumentException for an unknown backend, or postgres without a JDBC URL or
   *     with an invalid setting (the message names the setting)
   */
  public static StorageBackend fromConfig(Config config) {
    Config storage = config.getConfig("troupe.storage");
    String backend = storage.getString("backend").toLowerCase(Locale.ROOT);
    return switch (backend) {
      case "rocksdb" -> new StorageBackend(Kind.ROCKSDB, null);
      case "postgres" -> {
        Config postgres = storage.getConfig("postgres");
        String url = postgres.getString("jdbc-url");
        if (url.isBlank()) {
          throw new IllegalArgumentException("troupe.storage.backend = postgres needs the database:"
              + " troupe.storage.postgres.jdbc-url (serve --jdbc-url), e.g."
              + " jdbc:postgresql://10.0.0.5:5432/troupe");
        }
        yield new StorageBackend(Kind.POSTGRES, new PostgresDiskSettings(url,
            postgres.getString("user"), postgres.getString("password"),
            postgres.getInt("maximum-pool-size"), postgres.getLong("connection-timeout-millis"),
            postgres.getInt("cursor-page-rows")));
      }
      default -> throw new IllegalArgumentException(
          "troupe.storage.backend must be rocksdb or postgres, was '" + backend + "'");
    };
  }

  /** Opens and recovers the store on this backend (see {@link RocksStore#open}). */
  public RocksStore open(StorageSettings storage, Clock clock) {
    return switch (kind) {
      case ROCKSDB -> RocksStore.open(storage, clock);
      case POSTGRES -> RocksStore.open(storage, clock, PostgresDisk.open(postgres),
          RocksStore.Execution.THREADS);
    };
  }

  /** Where the data is, for the node's start-up line: the directory or the database. */
  public String describe(StorageSettings storage) {
    return switch (kind) {
      case ROCKSDB -> "data: " + storage.directory().toAbsolutePath();
      // Without the URL's parameters, which may carry a password.
      case POSTGRES -> "storage: PostgreSQL at " + postgres.jdbcUrl().replaceFirst("\\?.*$", "");
    };
  }
}
