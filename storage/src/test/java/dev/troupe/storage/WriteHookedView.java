package dev.troupe.storage;

/**
 * A non-closing view of a shared disk ({@link SharedDiskView}) that runs a test's hook before
 * every write, to hold writes or to see which thread writes.
 */
final class WriteHookedView extends SharedDiskView {
  private final Runnable beforeWrite;

  WriteHookedView(KeyValueDisk shared, Runnable beforeWrite) {
    super(() -> shared);
    this.beforeWrite = beforeWrite;
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    beforeWrite.run();
    super.write(batch, sync);
  }
}
