package dev.troupe.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** A directory under the system's temporary directory, deleted with everything in it on close. */
final class TemporaryDirectory implements AutoCloseable {
  private final Path path;

  private TemporaryDirectory(Path path) {
    this.path = path;
  }

  static TemporaryDirectory create(String prefix) throws IOException {
    return new TemporaryDirectory(Files.createTempDirectory("troupe-bench-" + prefix + "-"));
  }

  /** A path inside the directory (not created: the stores create their own directories). */
  Path resolve(String name) {
    return path.resolve(name);
  }

  @Override
  public void close() {
    deleteRecursively(path);
  }

  /** Deletes a file or a directory tree; nothing happens if it does not exist. */
  static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path file : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(file);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + root + ": " + e.getMessage(), e);
    }
  }
}
