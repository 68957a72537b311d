package dev.troupe.server.http;

import dev.troupe.model.TroupeException;
import dev.troupe.model.ErrorCode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The web console's files ({@code /console}, docs/ARCHITECTURE.md "Console"): plain HTML, ES
 * modules and CSS kept in the server's resources under {@code console/}, read once at start and
 * served as they are. No build step and nothing generated: what is in the repository is what the
 * browser runs.
 *
 * <p>Public: the files hold no data and no secret (every call the console makes carries the token
 * its user typed, and is authorized like any client's), so a browser can load the page and then
 * ask for a token. Only the files named in {@link #FILES} exist; any other path under {@code
 * /console/} is a 404, so a path never reaches the class path by its name.
 *
 * <p>Concurrency: immutable after construction.
 */
final class ConsoleAssets {
  /** A file: its bytes and its media type. */
  record Asset(byte[] bytes, String mediaType) {}

  /** The console's files, by name under {@code /console/}. */
  static final List<String> FILES = List.of("index.html", "console.css", "app.js", "api.js",
      "pages.js", "svg.js", "metrics.js");

  /** The console's own policy: only its own files, scripts and connections; no framing. */
  static final String CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self';"
      + " style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self';"
      + " frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

  private final Map<String, Asset> assets = new LinkedHashMap<>();

  ConsoleAssets() {
    for (String name : FILES) {
      assets.put(name, new Asset(read("/console/" + name), mediaType(name)));
    }
  }

  /** Whether {@code path} (the URI's path) is the console's: {@code /console} or below. */
  static boolean isConsolePath(String path) {
    return path.equals("/console") || path.startsWith("/console/");
  }

  /**
   * The file {@code path} names: {@code /console} and {@code /console/} are the page.
   *
   * @throws TroupeException {@code not_found} for any other path
   */
  Asset asset(String path) {
    String name = path.equals("/console") || path.equals("/console/") ? "index.html"
        : path.substring("/console/".length());
    return Optional.ofNullable(assets.get(name)).orElseThrow(() -> new TroupeException(
        ErrorCode.NOT_FOUND, "the console has no file '" + name + "'"));
  }

  private static String mediaType(String name) {
    if (name.endsWith(".html")) {
      return "text/html";
    }
    if (name.endsWith(".css")) {
      return "text/css";
    }
    if (name.endsWith(".js")) {
      return "text/javascript";
    }
    throw new IllegalArgumentException("no media type for " + name);
  }

  private static byte[] read(String name) {
    try (InputStream in = ConsoleAssets.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is not on the class path");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
