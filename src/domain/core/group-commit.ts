export interface GroupCommitOptions<T> {
  /** Groups written at once (default 2). */
  maxInFlight?: number;
  /** A group's cap, in weight (default 1000); a group always takes at least one item. */
  maxWeight?: number;
  /** How much an item counts toward the cap (default 1: the cap counts items). */
  weight?: (item: T) => number;
  /** Whether a failed group retries each item alone (default true) or fails together. */
  retryAlone?: boolean;
}

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
  private readonly maxWeight: number;
  private readonly weight: (item: T) => number;
  private readonly retryAlone: boolean;

  constructor(flush: (items: T[]) => Promise<R[]>, opts: GroupCommitOptions<T> = {}) {
    this.flush = flush;
    this.maxInFlight = opts.maxInFlight ?? 2;
    this.maxWeight = opts.maxWeight ?? 1000;
    this.weight = opts.weight ?? (() => 1);
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
      let taken = 1;
      let weight = this.weight(this.queue[0].item);
      while (taken < this.queue.length) {
        const next = this.weight(this.queue[taken].item);
        if (weight + next > this.maxWeight) break;
        weight += next;
        taken++;
      }
      const group = this.queue.splice(0, taken);
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
