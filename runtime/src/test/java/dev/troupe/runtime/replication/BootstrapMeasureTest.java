package dev.troupe.runtime.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.spec.SpecParser;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * A measurement, not a check (runs only with {@code -Dentities=N}): the time to read a bootstrap
 * image of N single-counter entities from a running engine and to install it into an empty store.
 * {@code mvn -B -ntp -o -q -pl runtime -am -Dtest=BootstrapMeasureTest -Dentities=20000
 * -Dsurefire.failIfNoSpecifiedTests=false verify}, then the MEASURE line of its output.
 */
@EnabledIfSystemProperty(named = "entities", matches = "\\d+")
class BootstrapMeasureTest {
  @TempDir Path root;

  @Test
  void measure() throws Exception {
    int entities = Integer.getInteger("entities");
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      dcs.troupe("a").defineType(SpecParser.parse("Account", ("{\"keys\": {\"n\": {\"kind\":"
          + " \"counter\"}, \"s\": {\"kind\": \"set\"}}}").getBytes(StandardCharsets.UTF_8),
          false)).join();
      for (int from = 0; from < entities; from += 500) {
        List<CompletableFuture<?>> writes = new ArrayList<>();
        for (int i = from; i < Math.min(entities, from + 500); i++) {
          writes.add(dcs.troupe("a").increment(new EntityId("Account", "e" + i), "n", i));
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
      }
      long started = System.nanoTime();
      ByteArrayOutputStream image = new ByteArrayOutputStream();
      try (BootstrapImageReader reader = new BootstrapImageReader(dcs.troupe("a").store(),
          dcs.shell("a"), 77, BootstrapSettings.DEFAULTS)) {
        for (byte[] frame = reader.next(); frame != null; frame = reader.next()) {
          image.write(frame);
        }
      }
      long read = System.nanoTime() - started;
      long[] installed = new long[1];
      BootstrapInstaller.Outcome[] outcomes = new BootstrapInstaller.Outcome[1];
      dcs.restart("b", dc -> {
        try (var paths = java.nio.file.Files.walk(dc.directory)) {
          paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
          long began = System.nanoTime();
          outcomes[0] = BootstrapInstaller.prepare(dc.settings.storage(), "a",
              () -> new ByteArrayInputStream(image.toByteArray()), BootstrapSettings.DEFAULTS);
          installed[0] = System.nanoTime() - began;
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      BootstrapInstaller.Outcome outcome = outcomes[0];
      System.out.printf("MEASURE entities %d (image %d bytes): read %.0f ms (%.0f entities/s),"
              + " install %.0f ms (%.0f entities/s)%n", outcome.entities(), image.size(),
          read / 1e6, outcome.entities() / (read / 1e9), installed[0] / 1e6,
          outcome.entities() / (installed[0] / 1e9));
    }
  }
}
