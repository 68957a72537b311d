package dev.troupe.storage;

import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** {@link RocksDisk} keeps the {@link KeyValueDiskContract}. */
class RocksDiskContractTest extends KeyValueDiskContract {
  @TempDir Path directory;

  @Override
  protected KeyValueDisk openDisk() {
    return RocksDisk.open(directory);
  }
}
