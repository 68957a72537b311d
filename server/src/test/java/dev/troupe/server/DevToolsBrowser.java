package dev.troupe.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * A real headless chromium driven over the Chrome DevTools protocol, with the JDK's WebSocket and
 * Jackson (no driver library, no Python): the browser the console's test opens pages in.
 *
 * <p>Started with a fresh profile in a temporary directory and {@code --remote-debugging-port=0};
 * the port it chose is read from {@code DevToolsActivePort} in the profile. One page target is
 * attached; its Runtime, Log, Network and Page domains are enabled and every problem they report
 * is collected ({@link #problems}): uncaught exceptions, console errors, log entries of level
 * error, failed loads and answers with a status of 400 or more.
 */
public final class DevToolsBrowser implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(15);

  private final Process process;
  private final Path profile;
  private final WebSocket socket;
  private final AtomicInteger ids = new AtomicInteger();
  private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
  private final List<String> problems = java.util.Collections.synchronizedList(new ArrayList<>());
  private final List<String> answersSeen = java.util.Collections.synchronizedList(new ArrayList<>());

  private DevToolsBrowser(Process process, Path profile, WebSocket socket) {
    this.process = process;
    this.profile = profile;
    this.socket = socket;
  }

  private static final Path INSTALL = Path.of("src/test/console/install-chromium.sh");

  /**
   * The path of Debian's chromium, installed with apt by the project's script ({@code
   * src/test/console/install-chromium.sh}) when missing. Fails, never skips: a browser test that
   * cannot get its browser is a failed test.
   */
  public static String installedChromium() throws Exception {
    long started = System.nanoTime();
    Process install = new ProcessBuilder("bash", INSTALL.toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String printed = new String(install.getInputStream().readAllBytes(),
        java.nio.charset.StandardCharsets.UTF_8);
    if (!install.waitFor(10, TimeUnit.MINUTES)) {
      install.destroyForcibly();
      throw new IllegalStateException("installing chromium took over 10 min");
    }
    if (install.exitValue() != 0) {
      throw new IllegalStateException("chromium could not be installed (" + INSTALL
          + "); the console's tests need it and are never skipped");
    }
    System.out.printf("chromium ready in %d ms%n",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    return printed.strip();
  }

  /** Starts {@code chromium} headless with a fresh profile and attaches to its page. */
  public static DevToolsBrowser start(String chromium, int width, int height) throws Exception {
    Path profile = Files.createTempDirectory("troupe-console-chromium");
    Process process = new ProcessBuilder(chromium, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-extensions",
        // Containers often have a small /dev/shm, which crashes chromium's renderers.
        "--disable-dev-shm-usage",
        "--remote-debugging-port=0", "--user-data-dir=" + profile,
        "--window-size=" + width + "," + height, "about:blank")
        .redirectErrorStream(true)
        .redirectOutput(profile.resolve("chromium.log").toFile())
        .start();
    Path portFile = profile.resolve("DevToolsActivePort");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!Files.exists(portFile) || Files.readAllLines(portFile).size() < 2) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        String log = Files.exists(profile.resolve("chromium.log"))
            ? Files.readString(profile.resolve("chromium.log")) : "";
        process.destroyForcibly();
        throw new IllegalStateException("chromium did not open its DevTools port\n" + log);
      }
      Thread.sleep(20);
    }
    int port = Integer.parseInt(Files.readAllLines(portFile).get(0).trim());
    HttpClient http = HttpClient.newHttpClient();
    JsonNode targets = JSON.readTree(http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/json/list")).build(),
        HttpResponse.BodyHandlers.ofString()).body());
    String pageSocket = null;
    for (JsonNode target : targets) {
      if (target.path("type").asText().equals("page")) {
        pageSocket = target.path("webSocketDebuggerUrl").asText();
        break;
      }
    }
    if (pageSocket == null) {
      process.destroyForcibly();
      throw new IllegalStateException("chromium has no page target: " + targets);
    }
    Listener listener = new Listener();
    WebSocket socket = http.newWebSocketBuilder().buildAsync(URI.create(pageSocket), listener)
        .get(10, TimeUnit.SECONDS);
    DevToolsBrowser browser = new DevToolsBrowser(process, profile, socket);
    listener.browser = browser;
    for (String domain : List.of("Runtime", "Log", "Network", "Page")) {
      browser.call(domain + ".enable", JSON.createObjectNode());
    }
    return browser;
  }

  /** Sends a command and waits for its result; an error answer fails. */
  public JsonNode call(String method, ObjectNode params) throws Exception {
    int id = ids.incrementAndGet();
    CompletableFuture<JsonNode> answer = new CompletableFuture<>();
    pending.put(id, answer);
    ObjectNode message = JSON.createObjectNode();
    message.put("id", id);
    message.put("method", method);
    message.set("params", params);
    socket.sendText(JSON.writeValueAsString(message), true).get(5, TimeUnit.SECONDS);
    JsonNode reply = answer.get(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    if (reply.has("error")) {
      throw new IllegalStateException(method + " failed: " + reply.get("error"));
    }
    return reply.path("result");
  }

  /** Opens {@code url} in the page. */
  public void navigate(String url) throws Exception {
    ObjectNode params = JSON.createObjectNode().put("url", url);
    call("Page.navigate", params);
  }

  /** Evaluates {@code expression} in the page (awaiting a promise) and returns its value. */
  public JsonNode evaluate(String expression) throws Exception {
    ObjectNode params = JSON.createObjectNode().put("expression", expression)
        .put("returnByValue", true).put("awaitPromise", true);
    JsonNode result = call("Runtime.evaluate", params);
    if (result.has("exceptionDetails")) {
      throw new IllegalStateException("evaluating " + expression + " threw "
          + result.get("exceptionDetails"));
    }
    return result.path("result").path("value");
  }

  /** Waits until {@code condition} (a JavaScript expression) is true in the page. */
  public void await(String condition, Duration timeout, String what) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    // False while the page cannot answer yet (still loading: its elements are not there).
    String guarded = "(() => { try { return Boolean(" + condition + "); } catch (notYet) {"
        + " return false; } })()";
    while (!evaluate(guarded).asBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what + " (" + condition + "); page: "
            + evaluate("document.body.innerText") + "\nproblems: " + problems());
      }
      Thread.sleep(25);
    }
  }

  /** Saves a PNG of the page as it is now. */
  public void screenshot(Path file) throws Exception {
    JsonNode shot = call("Page.captureScreenshot", JSON.createObjectNode().put("format", "png"));
    Files.createDirectories(file.getParent());
    Files.write(file, Base64.getDecoder().decode(shot.path("data").asText()));
  }

  /** What went wrong in the page since the last {@link #clearProblems}. */
  public List<String> problems() {
    synchronized (problems) {
      return List.copyOf(problems);
    }
  }

  public void clearProblems() {
    problems.clear();
    answersSeen.clear();
  }

  /** Every HTTP answer the page got, as {@code STATUS URL}, since the last clear. */
  public List<String> answersSeen() {
    synchronized (answersSeen) {
      return List.copyOf(answersSeen);
    }
  }

  private void received(JsonNode message) {
    if (message.has("id")) {
      CompletableFuture<JsonNode> answer = pending.remove(message.get("id").asInt());
      if (answer != null) {
        answer.complete(message);
      }
      return;
    }
    JsonNode params = message.path("params");
    switch (message.path("method").asText()) {
      case "Runtime.exceptionThrown" -> problems.add("uncaught exception: "
          + params.path("exceptionDetails").path("exception").path("description").asText(
              params.path("exceptionDetails").path("text").asText()));
      case "Runtime.consoleAPICalled" -> {
        String type = params.path("type").asText();
        if (type.equals("error") || type.equals("assert")) {
          problems.add("console." + type + ": " + params.path("args"));
        }
      }
      case "Log.entryAdded" -> {
        JsonNode entry = params.path("entry");
        if (entry.path("level").asText().equals("error")) {
          problems.add("log error (" + entry.path("source").asText() + "): "
              + entry.path("text").asText() + " " + entry.path("url").asText());
        }
      }
      case "Network.loadingFailed" -> problems.add("failed request: "
          + params.path("errorText").asText() + " (" + params.path("type").asText() + ")");
      case "Network.responseReceived" -> {
        JsonNode response = params.path("response");
        int status = response.path("status").asInt();
        answersSeen.add(status + " " + response.path("url").asText());
        if (status >= 400) {
          problems.add("answer " + status + " to " + response.path("url").asText());
        }
      }
      default -> { }
    }
  }

  @Override
  public void close() throws Exception {
    try {
      socket.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(2, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // The browser is stopped below whatever the socket says.
    }
    process.destroy();
    if (!process.waitFor(5, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
    }
    // Best effort, a few passes: the browser's child processes (its network service) may still
    // be renaming files in the profile while the walk lists it, and a file gone between listing
    // and reading is no failure of the test.
    for (int pass = 0; pass < 3 && Files.exists(profile); pass++) {
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
      } catch (java.io.UncheckedIOException | java.io.IOException vanished) {
        // Walked again by the next pass.
      }
    }
  }

  /** Joins a message's fragments and hands each whole message to the browser. */
  private static final class Listener implements WebSocket.Listener {
    private final StringBuilder text = new StringBuilder();
    private volatile DevToolsBrowser browser;

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
      text.append(data);
      if (last) {
        String message = text.toString();
        text.setLength(0);
        try {
          browser.received(JSON.readTree(message));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      webSocket.request(1);
      return null;
    }
  }
}
