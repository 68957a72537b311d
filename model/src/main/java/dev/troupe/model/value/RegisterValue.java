package dev.troupe.model.value;

import com.fasterxml.jackson.databind.JsonNode;

/** Last-writer-wins register: the write with the greater (timestamp, origin data centre) wins. */
public record RegisterValue(JsonNode value, long timestamp, int originDc) implements Value {
  @Override
  public KeyKind kind() {
    return KeyKind.REGISTER;
  }

  @Override
  public JsonNode toJson() {
    return value;
  }

  public boolean supersedes(RegisterValue other) {
    return stamp().isAfter(other.stamp());
  }

  /** The write's last-writer-wins stamp. */
  public Stamp stamp() {
    return new Stamp(timestamp, originDc);
  }

}
