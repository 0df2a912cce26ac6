/**
 * Group commit: items submitted while a write is in flight wait and go together in the next one,
 * so concurrent requests share one transaction (one round trip, one commit) and each is still
 * answered only after its own write committed. `flush` writes a group and returns one result per
 * item, in order; if a merged group fails, each item is retried alone so one bad item cannot fail
 * the others (unless `retryAlone` is false: then the group fails together). Reads group the same
 * way (API key lookups): each group's query starts after all its items arrived.
 */
export class GroupCommit<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (err: unknown) => void }[] = [];
  private inFlight = 0;
  private readonly flush: (items: T[]) => Promise<R[]>;
  private readonly maxInFlight: number;
  private readonly maxItems: number;
  private readonly retryAlone: boolean;

  constructor(
    flush: (items: T[]) => Promise<R[]>,
    opts: { maxInFlight?: number; maxItems?: number; retryAlone?: boolean } = {},
  ) {
    this.flush = flush;
    this.maxInFlight = opts.maxInFlight ?? 2;
    this.maxItems = opts.maxItems ?? 1000;
    this.retryAlone = opts.retryAlone ?? true;
  }

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump() {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const group = this.queue.splice(0, this.maxItems);
      this.inFlight++;
      void this.commit(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async commit(group: typeof this.queue) {
    try {
      const results = await this.flush(group.map((g) => g.item));
      group.forEach((g, i) => {
        g.resolve(results[i]);
      });
    } catch (err) {
      if (group.length === 1 || !this.retryAlone) {
        for (const g of group) g.reject(err);
        return;
      }
      await Promise.all(group.map((g) => this.flush([g.item]).then(([r]) => g.resolve(r), g.reject)));
    }
  }
}
