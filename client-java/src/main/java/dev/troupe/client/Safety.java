package dev.troupe.client;

/** What may be sent again after a request was (perhaps) sent and no usable answer came back. */
enum Safety {
  /** A read, or a write idempotent by nature (declaring a type): always safe to send again. */
  SAFE,
  /**
   * A write that takes an {@code Idempotency-Key}: sent again with the same key, the server
   * answers the first attempt's answer and does nothing twice.
   */
  KEYED,
  /**
   * Neither (an interactive step, begin, abort): sent again only when the server said it did
   * nothing (429, the 503s but {@code unavailable}) or the connection was never made.
   */
  ONCE
}
