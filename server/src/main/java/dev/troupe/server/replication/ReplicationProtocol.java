package dev.troupe.server.replication;

/**
 * The names of pulls between data centres over HTTP (docs/ARCHITECTURE.md, "Between data centres
 * over HTTP"): what a puller sends and the endpoint reads.
 */
public final class ReplicationProtocol {
  /** The endpoint a peer pulls from: {@code GET ?origin=&after=&limit=}. */
  public static final String LOG_PATH = "/v1/replication/log";
  /** The bootstrap image a DC added to a running set reads ({@code serve --bootstrap-from}). */
  public static final String BOOTSTRAP_PATH = "/v1/replication/bootstrap";
  /**
   * A replication stream of a peer's log: {@code GET ?origin=&after=}, answered with batch after
   * batch in one chunked answer.
   */
  public static final String STREAM_PATH = "/v1/replication/stream";
  /** The pulling DC's name. */
  public static final String DC_HEADER = "Troupe-Dc";
  /** The pulling DC's received vector ({@link VectorText}), which the stable vector is taken over. */
  public static final String RECEIVED_VECTOR_HEADER = "Troupe-Received-Vector";
  /** A client's causal token ({@link VectorText}), on requests and on every answer. */
  public static final String CAUSAL_TOKEN_HEADER = "Troupe-Causal-Token";
  /** The media type of a pull's answer: one batch in {@code ReplicationCodec}'s encoding. */
  public static final String BATCH_MEDIA_TYPE = "application/octet-stream";

  private ReplicationProtocol() {}
}
