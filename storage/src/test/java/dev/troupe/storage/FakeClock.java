package dev.troupe.storage;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/** A physical clock the test moves by hand. */
final class FakeClock implements LongSupplier {
  private final AtomicLong millis;

  FakeClock(long startMillis) {
    this.millis = new AtomicLong(startMillis);
  }

  @Override
  public long getAsLong() {
    return millis.get();
  }

  void advance(long byMillis) {
    millis.addAndGet(byMillis);
  }

  void set(long value) {
    millis.set(value);
  }
}
