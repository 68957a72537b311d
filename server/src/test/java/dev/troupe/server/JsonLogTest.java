package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import dev.troupe.server.logging.LogFormat;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code troupe.log.format}: with json, every line a server logs, from start to its graceful stop,
 * is one JSON object with the fields a log shipper indexes and the node's identity; a value that
 * is neither text nor json stops {@code serve} before it opens anything, saying why.
 */
class JsonLogTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** A line of logback.xml's text pattern: "12:34:56.789 INFO  logger - message". */
  private static final Pattern TEXT_LINE =
      Pattern.compile("^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} (TRACE|DEBUG|INFO|WARN|ERROR)");

  @TempDir Path data;

  @Test
  void aJsonServerLogsOneParsableObjectPerLineWithItsIdentity() throws Exception {
    String log;
    try (ServerProcess server = ServerProcess.start(data.resolve("node"),
        "troupe.log.format=json", "troupe.node.id=7")) {
      assertEquals(200, server.get("/v1/health/ready").status());
      server.close();
      log = server.log();
    }
    List<JsonNode> events = new ArrayList<>();
    for (String line : log.split("\n")) {
      assertFalse(TEXT_LINE.matcher(line).find(), "a text log line in json mode: " + line);
      if (line.startsWith("{")) {
        events.add(JSON.readTree(line));
      }
    }
    // The engine logs at INFO while it opens the store and while it drains at SIGTERM.
    assertTrue(events.size() >= 2, "too few JSON log lines in:\n" + log);
    for (JsonNode event : events) {
      for (String field : new String[] {"timestamp", "level", "loggerName", "threadName",
          "formattedMessage", "mdc"}) {
        assertTrue(event.has(field), field + " missing in " + event);
      }
      assertEquals("7", event.path("context").path("properties").path("troupe.node.id").asText(),
          event.toString());
    }
    assertTrue(events.stream().anyMatch(event -> event.path("loggerName").asText()
        .startsWith("dev.troupe")), "no line from the engine in:\n" + log);
  }

  @Test
  void anUnknownFormatStopsServeBeforeItOpensTheStore() throws Exception {
    ServerProcess.Finished finished = ServerProcess.run(List.of("serve", "--data",
        data.resolve("refused").toString(), "--port", "0", "--set", "troupe.log.format=xml"));
    assertEquals(78, finished.exitStatus(), finished.output());
    assertTrue(finished.output().contains("troupe.log.format must be text or json, was 'xml'"),
        finished.output());
    assertFalse(data.resolve("refused").resolve("CURRENT").toFile().exists(),
        "the store was opened");
  }

  @Test
  void theFormatIsReadCaseInsensitivelyAndDefaultsToText() {
    assertEquals(LogFormat.TEXT, LogFormat.fromConfig(ConfigFactory.load()));
    assertEquals(LogFormat.JSON,
        LogFormat.fromConfig(ConfigFactory.parseString("troupe.log.format = JSON")));
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> LogFormat.fromConfig(ConfigFactory.parseString("troupe.log.format = yaml")));
    assertTrue(refused.getMessage().contains("text or json"), refused.getMessage());
  }
}
