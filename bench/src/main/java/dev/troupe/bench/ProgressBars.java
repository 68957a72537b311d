package dev.troupe.bench;

import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/** The one progress bar style of the benchmarks: plain ASCII on standard error. */
final class ProgressBars {
  private ProgressBars() {}

  /**
   * A bar counting to {@code max}, shown in {@code unitName} of {@code unitSize} counts each (e.g.
   * milliseconds shown as "s" of 1000).
   */
  static ProgressBar start(String task, long max, String unitName, long unitSize) {
    return new ProgressBarBuilder()
        .setTaskName(task)
        .setInitialMax(max)
        .setStyle(ProgressBarStyle.ASCII)
        .setUnit(unitName, unitSize)
        .setUpdateIntervalMillis(250)
        .build();
  }
}
