package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.client.EntityPage;
import dev.troupe.client.ListQuery;
import dev.troupe.client.ListedEntity;
import dev.troupe.client.RetryPolicy;
import dev.troupe.client.TroupeClient;
import dev.troupe.client.TroupeClientException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * The YCSB binding of {@link RestEntityDb} (same requests, same properties but the owner-aware
 * ones) made with the Java client ({@code client-java}, on the JDK's HttpClient) instead of {@link
 * HttpConnection}: {@code get}, {@code patch}, {@code delete} and {@code listEntities} with {@code
 * from}, a limit and states. It measures what an application on the client gets; the
 * benchmarks' figures use {@link RestEntityDb} (docs/BENCHMARKS.md, "The Java client as the YCSB
 * driver", says why). Writes carry idempotency keys, and failures are retried, only with {@code
 * troupe.rest.idempotency-keys=true} (one retry); otherwise every request is sent once.
 *
 * <p>One client per server shared by the YCSB threads (the HttpClient pools its connections), on
 * a direct executor: the answer is handled on the HttpClient's selector thread instead of being
 * handed to a pool thread, which measured 0.72 of {@link RestEntityDb}'s throughput against 0.53
 * and 0.65 on the default executor (docs/BENCHMARKS.md). Only the blocking face is used, so
 * nothing blocks on that thread.
 */
public final class ClientEntityDb extends DB {
  private static final Map<String, TroupeClient> CLIENTS = new ConcurrentHashMap<>();

  private TroupeClient client;

  @Override
  public void init() {
    String host = getProperties().getProperty(RestEntityDb.HOST_PROPERTY, "127.0.0.1");
    String port = getProperties().getProperty(RestEntityDb.PORT_PROPERTY);
    String token = getProperties().getProperty(RestEntityDb.TOKEN_PROPERTY);
    boolean keyed = Boolean.parseBoolean(
        getProperties().getProperty(RestEntityDb.IDEMPOTENCY_KEYS_PROPERTY));
    String url = "http://" + host + ":" + port;
    client = CLIENTS.computeIfAbsent(url + " " + token + " " + keyed,
        ignored -> TroupeClient.builder(url).token(token).executor(Runnable::run)
            .retry(keyed ? RetryPolicy.DEFAULT.withMaxAttempts(2) : RetryPolicy.NONE).build());
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      // As RestEntityDb: named fields are asked for alone (a projection), every field as a whole.
      copyFields((fields == null || fields.size() > RestEntityDb.MAX_PROJECTION_KEYS
          ? client.get(table, key)
          : client.get(table, key, java.util.List.copyOf(fields))).state(), fields, result);
      return Status.OK;
    } catch (TroupeClientException.NotFound missing) {
      return Status.NOT_FOUND;
    } catch (RuntimeException failed) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startKey, int recordCount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      EntityPage page = client.listEntities(table,
          ListQuery.firstPage().from(startKey).limit(recordCount).withStates());
      for (ListedEntity entity : page.entities()) {
        HashMap<String, ByteIterator> record = new HashMap<>();
        copyFields(entity.state().orElseThrow(), fields, record);
        result.add(record);
      }
      return Status.OK;
    } catch (TroupeClientException.Overloaded | TroupeClientException.Unavailable busy) {
      return Status.SERVICE_UNAVAILABLE;
    } catch (TroupeClientException.InvalidRequest bad) {
      return Status.BAD_REQUEST;
    } catch (RuntimeException failed) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return patch(table, key, values);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return patch(table, key, values);
  }

  @Override
  public Status delete(String table, String key) {
    try {
      client.delete(table, key);
      return Status.OK;
    } catch (TroupeClientException.NotFound missing) {
      return Status.NOT_FOUND;
    } catch (RuntimeException failed) {
      return Status.ERROR;
    }
  }

  private Status patch(String table, String key, Map<String, ByteIterator> values) {
    try {
      Map<String, String> fields = new LinkedHashMap<>();
      values.forEach((field, value) -> fields.put(field, value.toString()));
      // No state back (?state=none), as RestEntityDb asks: YCSB never reads a write's answer.
      client.patch(table, key, fields, java.util.List.of());
      return Status.OK;
    } catch (RuntimeException failed) {
      return Status.ERROR;
    }
  }

  private static void copyFields(ObjectNode state, Set<String> fields,
      Map<String, ByteIterator> result) {
    if (fields == null) {
      Iterator<Map.Entry<String, JsonNode>> entries = state.fields();
      while (entries.hasNext()) {
        Map.Entry<String, JsonNode> entry = entries.next();
        result.put(entry.getKey(), new StringByteIterator(entry.getValue().asText()));
      }
    } else {
      for (String field : fields) {
        JsonNode value = state.get(field);
        if (value != null) {
          result.put(field, new StringByteIterator(value.asText()));
        }
      }
    }
  }
}
