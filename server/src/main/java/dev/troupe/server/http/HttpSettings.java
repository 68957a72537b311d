package dev.troupe.server.http;

import com.typesafe.config.Config;

/** The REST server's settings and request limits, parsed once from {@code troupe.http}. */
public record HttpSettings(
    String host,
    int port,
    int maxBodyBytes,
    int maxValueBytes,
    int maxIdLength,
    int maxKeyLength,
    int maxTypeNameLength,
    int maxInFlightRequests,
    long bodyReadTimeoutMillis) {

  public static HttpSettings fromConfig(Config config) {
    Config http = config.getConfig("troupe.http");
    return new HttpSettings(
        http.getString("host"),
        http.getInt("port"),
        http.getInt("max-body-bytes"),
        http.getInt("max-value-bytes"),
        http.getInt("max-id-length"),
        http.getInt("max-key-length"),
        http.getInt("max-type-name-length"),
        http.getInt("max-in-flight-requests"),
        http.getLong("body-read-timeout-millis"));
  }
}
