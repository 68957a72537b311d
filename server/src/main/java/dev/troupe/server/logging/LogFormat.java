package dev.troupe.server.logging;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.OutputStreamAppender;
import com.typesafe.config.Config;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.LoggerFactory;

/**
 * The format of the server's log lines ({@code troupe.log.format}): {@link #TEXT}, one
 * human-readable line per event as {@code logback.xml} writes it, or {@link #JSON}, one JSON
 * object per line (logback's own {@link JsonEncoder}) for log shippers that index fields.
 *
 * <p>Why a switch applied after the settings are read, and not a second logback file: the format
 * is a setting like every other (reference.conf, {@code --set}, {@code --config}, the
 * environment), read once; logback starts before the settings exist, so the few lines logged
 * before it (none by the engine) stay text. The switch swaps the encoder of every console
 * appender on the root logger, stopping and restarting each, so no line is half in one format.
 *
 * <p>A JSON line carries {@code timestamp}, {@code level}, {@code threadName}, {@code loggerName},
 * {@code formattedMessage} (the message with its arguments filled in), {@code mdc} (what Pekko's
 * logging puts there: the actor's path and address), {@code throwable} when there is one, and, as
 * the context's properties, this node's identity (node id, data centre), so that lines from the
 * members of a cluster can be told apart once shipped.
 */
public enum LogFormat {
  TEXT,
  JSON;

  /** The setting's path. */
  public static final String SETTING = "troupe.log.format";

  /**
   * The format {@code config} names.
   *
   * @throws IllegalArgumentException naming the setting and the accepted values when it names
   *     neither
   */
  public static LogFormat fromConfig(Config config) {
    String value = config.getString(SETTING);
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "text" -> TEXT;
      case "json" -> JSON;
      default -> throw new IllegalArgumentException(
          SETTING + " must be text or json, was '" + value + "'");
    };
  }

  /**
   * Makes the root logger's console appenders write this format, with {@code identity} as the
   * logging context's properties (in every JSON line). {@link #TEXT} leaves the configuration of
   * {@code logback.xml} as it is. Does nothing when logback is not the SLF4J binding (the server
   * jar always has it; an embedding application may not).
   */
  public void apply(Map<String, String> identity) {
    if (this == TEXT || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
      return;
    }
    identity.forEach(context::putProperty);
    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    List<OutputStreamAppender<ILoggingEvent>> consoles = new ArrayList<>();
    for (Iterator<Appender<ILoggingEvent>> appenders = root.iteratorForAppenders();
        appenders.hasNext(); ) {
      if (appenders.next() instanceof OutputStreamAppender<ILoggingEvent> console) {
        consoles.add(console);
      }
    }
    for (OutputStreamAppender<ILoggingEvent> console : consoles) {
      JsonEncoder encoder = new JsonEncoder();
      encoder.setContext(context);
      encoder.setWithFormattedMessage(true);
      // The raw pattern and its arguments repeat what formattedMessage says.
      encoder.setWithMessage(false);
      encoder.setWithArguments(false);
      encoder.setWithSequenceNumber(false);
      encoder.setWithNanoseconds(false);
      encoder.start();
      console.stop();
      console.setEncoder(encoder);
      console.start();
    }
  }
}
