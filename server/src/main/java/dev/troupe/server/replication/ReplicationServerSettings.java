package dev.troupe.server.replication;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import dev.troupe.model.causal.DataCentreIds;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the server needs to replicate between data centres over HTTP, parsed and checked once from
 * {@code troupe.dc} ({@code name}, {@code peers}: the names, and {@code peer-urls}: name to URL)
 * and {@code troupe.replication} ({@code serve --dc NAME --peer NAME=URL
 * --replication-secret-file FILE} set the same settings). The causal rules themselves (batch sizes,
 * forwarding, the token wait) are the runtime's {@code ReplicationSettings}.
 *
 * <p>Invariants (checked here, so a node never starts half-configured): a DC name is valid ({@link
 * DataCentreIds#isValidName}); peers need a DC name; no peer is named twice, named like this DC, or
 * has the id of this DC or another peer (two names with one CRC32C id would mix their logs); every
 * peer URL is {@code http(s)://host:port} of the peer's REST server, without path; peers need the
 * shared secret unless {@code allow-unauthenticated} is on (tests only).
 *
 * @param dataCentreName this DC's name, empty for a node with no DC (single DC, no replication)
 * @param peers the other DCs this one pulls from and serves
 * @param secret the shared secret peers present as {@code Authorization: Bearer <secret>}, on both
 *     sides of a pull; empty when none is configured
 * @param allowUnauthenticated serve and pull without a secret (tests on loopback only)
 * @param pullIntervalMillis how long a puller waits after a round that brought nothing new
 * @param pullBackoffInitialMillis the wait after a first failed pull; doubled per failure
 * @param pullBackoffMaxMillis the longest wait between failed pulls
 * @param pullTimeoutMillis how long one pull request may take, connection included
 * @param pullMaxAnswerBytes the largest answer to one pull a puller accepts
 * @param longPollMaxMillis the longest a pull of a peer's own entries is held at the peer while
 *     it has nothing new (the puller asks for this wait, the serving DC caps it at its own); 0: no
 *     long polls
 * @param longPollCheckIntervalMillis how often a held pull, or an idle replication stream, re-reads
 *     the log
 * @param stream whether a puller takes a peer's own entries as a replication stream ({@code GET
 *     /v1/replication/stream}: the peer pushes each commit as soon as it is in its log) rather than
 *     by long polls
 * @param streamHeartbeatMillis how often an idle replication stream carries a heartbeat (served);
 *     below {@code pullTimeoutMillis}, which is how long a puller waits for a stream's next bytes
 * @param streamMaxMillis how long a replication stream is served before it ends (the puller
 *     reopens it at once, reporting its received vector anew)
 * @param forwardTimeoutMillis how long a write forwarded to a strong type's home DC may take,
 *     connection and the whole answer included
 */
public record ReplicationServerSettings(
    String dataCentreName,
    List<Peer> peers,
    Optional<String> secret,
    boolean allowUnauthenticated,
    long pullIntervalMillis,
    long pullBackoffInitialMillis,
    long pullBackoffMaxMillis,
    long pullTimeoutMillis,
    long pullMaxAnswerBytes,
    long longPollMaxMillis,
    long longPollCheckIntervalMillis,
    boolean stream,
    long streamHeartbeatMillis,
    long streamMaxMillis,
    long forwardTimeoutMillis) {

  /** Shortest secret accepted: a guessable secret would let anyone read every DC's log. */
  public static final int MIN_SECRET_LENGTH = 16;

  /** A peer DC: its name, its id ({@link DataCentreIds#of}) and its REST server's base URL. */
  public record Peer(String name, int id, URI url) {}

  public ReplicationServerSettings {
    peers = List.copyOf(peers);
  }

  /** These settings with {@code peers} instead (peers added or removed at runtime). */
  public ReplicationServerSettings withPeers(List<Peer> peers) {
    return new ReplicationServerSettings(dataCentreName, peers, secret, allowUnauthenticated,
        pullIntervalMillis, pullBackoffInitialMillis, pullBackoffMaxMillis, pullTimeoutMillis,
        pullMaxAnswerBytes, longPollMaxMillis, longPollCheckIntervalMillis, stream,
        streamHeartbeatMillis, streamMaxMillis, forwardTimeoutMillis);
  }

  /** The peer named {@code name}, if it is one. */
  public Optional<Peer> peerNamed(String name) {
    return peers.stream().filter(peer -> peer.name().equals(name)).findFirst();
  }

  /** Whether this node has a DC name (and so replicates, given peers, and issues causal tokens). */
  public boolean named() {
    return !dataCentreName.isEmpty();
  }

  /** This DC's id, {@link DataCentreIds#UNNAMED} without a name. */
  public int dataCentreId() {
    return named() ? DataCentreIds.of(dataCentreName) : DataCentreIds.UNNAMED;
  }

  /** The peer with id {@code id}, if it is one. */
  public Optional<Peer> peer(int id) {
    return peers.stream().filter(peer -> peer.id() == id).findFirst();
  }

  /** The name of the DC with id {@code id} (this one or a peer), or the id in decimal. */
  public String nameOf(int id) {
    if (named() && id == dataCentreId()) {
      return dataCentreName;
    }
    return peer(id).map(Peer::name).orElse(Integer.toString(id));
  }

  /**
   * The id of the DC {@code nameOrId} names, by name or decimal id, if it is this DC or a peer.
   */
  public Optional<Integer> idOf(String nameOrId) {
    if (named() && (nameOrId.equals(dataCentreName)
        || nameOrId.equals(Integer.toString(dataCentreId())))) {
      return Optional.of(dataCentreId());
    }
    for (Peer peer : peers) {
      if (nameOrId.equals(peer.name()) || nameOrId.equals(Integer.toString(peer.id()))) {
        return Optional.of(peer.id());
      }
    }
    return Optional.empty();
  }

  /**
   * Parses {@code troupe.dc.name}, {@code troupe.dc.peers} (names), {@code troupe.dc.peer-urls}
   * ({@code { NAME = "http://host:port" }}) and {@code troupe.replication.*}.
   *
   * @throws IllegalArgumentException naming the setting, when anything is invalid or unsafe
   */
  public static ReplicationServerSettings fromConfig(Config config) {
    String name = config.hasPath("troupe.dc.name") ? config.getString("troupe.dc.name").trim() : "";
    if (!name.isEmpty() && !DataCentreIds.isValidName(name)) {
      throw new IllegalArgumentException("troupe.dc.name (--dc): '" + name
          + "' is not a valid data centre name (1-63 letters, digits, '.', '_' or '-',"
          + " starting with a letter or digit)");
    }
    List<Peer> peers = peers(config, name);
    Config replication = config.getConfig("troupe.replication");
    Optional<String> secret = secret(replication);
    boolean allowUnauthenticated = replication.getBoolean("allow-unauthenticated");
    if (!peers.isEmpty() && secret.isEmpty() && !allowUnauthenticated) {
      throw new IllegalArgumentException("peers are configured but no replication secret:"
          + " give every DC the same secret (--replication-secret-file FILE, or"
          + " troupe.replication.secret / secret-file); anyone reaching a DC could otherwise"
          + " read its whole replication log");
    }
    long initial = positive(replication, "pull-backoff-initial-millis");
    long max = positive(replication, "pull-backoff-max-millis");
    if (max < initial) {
      throw new IllegalArgumentException("troupe.replication.pull-backoff-max-millis (" + max
          + ") must be at least pull-backoff-initial-millis (" + initial + ")");
    }
    return new ReplicationServerSettings(name, peers, secret, allowUnauthenticated,
        positive(replication, "pull-interval-millis"), initial, max,
        positive(replication, "pull-timeout-millis"),
        positive(replication, "pull-max-answer-bytes"),
        longPollMax(replication),
        positive(replication, "long-poll-check-interval-millis"),
        replication.getBoolean("stream"),
        streamHeartbeat(replication),
        positive(replication, "stream-max-millis"),
        positive(replication, "forward-timeout-millis"));
  }

  /**
   * {@code stream-heartbeat-millis}: positive and below the pull timeout (a puller takes a stream
   * silent for that long for a dead link).
   */
  private static long streamHeartbeat(Config replication) {
    long millis = positive(replication, "stream-heartbeat-millis");
    long timeout = replication.getLong("pull-timeout-millis");
    if (millis >= timeout) {
      throw new IllegalArgumentException("troupe.replication.stream-heartbeat-millis (" + millis
          + ") must be below pull-timeout-millis (" + timeout + "): a puller takes a stream"
          + " silent for that long for a dead link");
    }
    return millis;
  }

  /** {@code long-poll-max-millis}: 0 (off) or positive, and below the pull timeout. */
  private static long longPollMax(Config replication) {
    long millis = replication.getLong("long-poll-max-millis");
    long timeout = replication.getLong("pull-timeout-millis");
    if (millis < 0 || millis >= timeout) {
      throw new IllegalArgumentException("troupe.replication.long-poll-max-millis must be 0 (off)"
          + " or positive and below pull-timeout-millis (" + timeout + "), was " + millis);
    }
    return millis;
  }

  /**
   * The peers: {@code troupe.dc.peers} names them (the engine's setting), {@code
   * troupe.dc.peer-urls} maps each name to its REST server's URL; each peer needs a URL and each URL
   * a peer.
   */
  private static List<Peer> peers(Config config, String ownName) {
    List<String> names = config.hasPath("troupe.dc.peers")
        ? config.getStringList("troupe.dc.peers") : List.of();
    Map<String, String> urls = new LinkedHashMap<>();
    if (config.hasPath("troupe.dc.peer-urls")) {
      for (Map.Entry<String, ConfigValue> entry
          : config.getObject("troupe.dc.peer-urls").entrySet()) {
        if (entry.getValue().valueType() != ConfigValueType.STRING) {
          throw new IllegalArgumentException("troupe.dc.peer-urls: the URL of '" + entry.getKey()
              + "' is not a string (quote a name with dots: \"eu.paris\" = \"http://...\")");
        }
        urls.put(entry.getKey(), (String) entry.getValue().unwrapped());
      }
    }
    if (!names.isEmpty() && ownName.isEmpty()) {
      throw new IllegalArgumentException(
          "troupe.dc.peers (--peer) needs this DC's own name (troupe.dc.name, --dc NAME)");
    }
    List<Peer> peers = new ArrayList<>();
    Map<Integer, String> namesById = new HashMap<>();
    if (!ownName.isEmpty()) {
      namesById.put(DataCentreIds.of(ownName), ownName);
    }
    for (String listed : names) {
      String name = listed.trim();
      if (!DataCentreIds.isValidName(name)) {
        throw new IllegalArgumentException("troupe.dc.peers (--peer): '" + name
            + "' is not a valid data centre name (1-63 letters, digits, '.', '_' or '-')");
      }
      if (name.equals(ownName)) {
        throw new IllegalArgumentException(
            "troupe.dc.peers (--peer): '" + name + "' is this DC's own name");
      }
      int id = DataCentreIds.of(name);
      String clash = namesById.putIfAbsent(id, name);
      if (clash != null) {
        throw new IllegalArgumentException(clash.equals(name)
            ? "troupe.dc.peers (--peer): peer '" + name + "' is listed twice"
            : "troupe.dc.peers (--peer): DC names '" + clash + "' and '" + name
                + "' have the same id " + id + " (a CRC32C collision): rename one of them");
      }
      String url = urls.remove(name);
      if (url == null) {
        throw new IllegalArgumentException("troupe.dc.peer-urls: peer '" + name
            + "' has no URL (--peer " + name + "=http://host:port)");
      }
      peers.add(new Peer(name, id, url(name, url.trim())));
    }
    if (!urls.isEmpty()) {
      throw new IllegalArgumentException("troupe.dc.peer-urls: " + urls.keySet()
          + " not in troupe.dc.peers; list every peer in both");
    }
    return peers;
  }

  /** {@code http(s)://host:port}, a trailing '/' allowed; no path, query, user or fragment. */
  static URI url(String peer, String text) {
    URI uri;
    try {
      uri = new URI(text.endsWith("/") ? text.substring(0, text.length() - 1) : text);
    } catch (URISyntaxException e) {
      throw badUrl(peer, text);
    }
    boolean plain = "http".equals(uri.getScheme()) || "https".equals(uri.getScheme());
    if (!plain || uri.getHost() == null || uri.getPort() < 1 || uri.getUserInfo() != null
        || !(uri.getRawPath() == null || uri.getRawPath().isEmpty()) || uri.getRawQuery() != null
        || uri.getRawFragment() != null) {
      throw badUrl(peer, text);
    }
    return uri;
  }

  private static IllegalArgumentException badUrl(String peer, String text) {
    return new IllegalArgumentException("troupe.dc.peers (--peer): peer '" + peer + "' has URL '"
        + text + "'; expected the base URL of its REST server, http://host:port or"
        + " https://host:port");
  }

  private static Optional<String> secret(Config replication) {
    String inline = replication.getString("secret");
    String file = replication.getString("secret-file");
    if (!inline.isEmpty() && !file.isEmpty()) {
      throw new IllegalArgumentException(
          "troupe.replication: give secret or secret-file (--replication-secret-file), not both");
    }
    String secret = inline;
    if (!file.isEmpty()) {
      try {
        secret = Files.readString(Path.of(file), StandardCharsets.UTF_8).trim();
      } catch (IOException e) {
        throw new IllegalArgumentException("troupe.replication.secret-file"
            + " (--replication-secret-file): cannot read " + file + ": " + e.getMessage());
      }
      if (secret.isEmpty()) {
        throw new IllegalArgumentException(
            "troupe.replication.secret-file (--replication-secret-file): " + file + " is empty");
      }
    }
    if (secret.isEmpty()) {
      return Optional.empty();
    }
    if (secret.length() < MIN_SECRET_LENGTH || secret.chars().anyMatch(c -> c <= ' ' || c > '~')) {
      throw new IllegalArgumentException("the replication secret must be at least "
          + MIN_SECRET_LENGTH + " printable ASCII characters without spaces (e.g. the output of"
          + " `openssl rand -hex 32`)");
    }
    return Optional.of(secret);
  }

  private static long positive(Config replication, String path) {
    long value = replication.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException(
          "troupe.replication." + path + " must be positive, was " + value);
    }
    return value;
  }
}
