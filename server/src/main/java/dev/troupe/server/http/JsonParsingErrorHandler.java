package dev.troupe.server.http;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;

/**
 * Pekko HTTP's answer to a request it could not parse (no route ever sees it: a request line or
 * target too long or malformed, bad percent-encoding, too many or too long headers, an unknown
 * method), made a JSON error from the closed set like every other answer. Pekko instantiates it by
 * name ({@code pekko.http.server.parsing.error-handler}, set by {@link Bindings}) with its no-argument
 * constructor.
 *
 * <p>Statuses outside the closed set (505 HTTP version not supported, 417 expectation failed, and
 * whatever else the parser may say) become {@code 400 invalid_request}: the request's form is
 * wrong either way.
 */
public final class JsonParsingErrorHandler extends ParsingErrorHandler {
  public JsonParsingErrorHandler() {}

  @Override
  public HttpResponse handle(StatusCode status, ErrorInfo info, LoggingAdapter log,
      ServerSettings settings) {
    ErrorCode code = code(status.intValue(), info.summary());
    String message = info.summary().isEmpty() ? status.reason() : info.summary();
    log.debug("refused an unparsable request: {} {}", status.intValue(), info.formatPretty());
    // The code's own status: the parser's when the code stands for it, 400 for the rest.
    return RequestSupport.error(new TroupeException(code, message));
  }

  /**
   * The error code for a parser's refusal with {@code status} and {@code summary}. Pekko answers a
   * long header value with 431 but too many headers with a plain 400; its summary ("HTTP message
   * contains more than the configured limit of N headers") is the only sign, so it is matched:
   * HttpEdgeTest fails if a Pekko upgrade changes the words.
   */
  static ErrorCode code(int status, String summary) {
    if (status == 400 && summary.startsWith("HTTP message contains more than the configured limit")) {
      return ErrorCode.HEADERS_TOO_LARGE;
    }
    return switch (status) {
      case 408 -> ErrorCode.REQUEST_TIMEOUT;
      case 413 -> ErrorCode.TOO_LARGE;
      case 414 -> ErrorCode.URI_TOO_LONG;
      case 431 -> ErrorCode.HEADERS_TOO_LARGE;
      case 501 -> ErrorCode.NOT_IMPLEMENTED;
      case 405 -> ErrorCode.METHOD_NOT_ALLOWED;
      case 404 -> ErrorCode.NOT_FOUND;
      case 503 -> ErrorCode.UNAVAILABLE;
      default -> ErrorCode.INVALID_REQUEST;
    };
  }
}
