/**
 * Group commit for one kind of write: the first item goes out at once; items that arrive while a write is under
 * way wait for it and then go out together, as one statement. A lone request pays nothing extra, and N concurrent
 * ones cost about two round trips instead of N (and the database parses and commits once for all of them).
 *
 * A batch that fails is written again item by item, so one bad item (a row whose session was deleted meanwhile)
 * fails only its own caller.
 */
export class Batcher<T, R> {
  private queue: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  private writing = false;

  constructor(
    /** Writes one item (used alone, and to retry the items of a failed batch). */
    private readonly writeOne: (item: T) => Promise<R>,
    /** Writes several items at once; the results are in the order of the items. */
    private readonly writeMany: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 100,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        if (batch.length === 1) {
          const [only] = batch as [(typeof batch)[number]];
          await this.writeOne(only.item).then(only.resolve, only.reject);
          continue;
        }
        try {
          const results = await this.writeMany(batch.map((entry) => entry.item));
          for (const [i, entry] of batch.entries()) entry.resolve(results[i] as R);
        } catch {
          await Promise.all(batch.map((entry) => this.writeOne(entry.item).then(entry.resolve, entry.reject)));
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
