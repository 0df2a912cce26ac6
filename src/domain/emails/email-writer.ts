import type { Db } from '../../db/database.ts';
import { applyWrite, type EmailWrite } from './accept.ts';

interface Pending {
  write: EmailWrite;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for accepted email. Every accept must commit its rows and delivery jobs before it is
 * answered, and each graphile-worker `add_jobs` ends in a NOTIFY that serialises commits across the
 * whole database (a few hundred a second). So accepts that arrive while a commit is in flight wait
 * and go together in the next transaction: one commit, one NOTIFY, one fsync for many requests, and
 * every request is still answered only after its own rows are durable. If a merged transaction
 * fails, each write is retried alone so one bad write cannot fail the others.
 */
export class EmailWriter {
  private queue: Pending[] = [];
  private inFlight = 0;
  private readonly db: Db;
  private readonly maxInFlight: number;
  private readonly maxMessages: number;

  constructor(db: Db, opts: { maxInFlight?: number; maxMessages?: number } = {}) {
    this.db = db;
    this.maxInFlight = opts.maxInFlight ?? 2;
    this.maxMessages = opts.maxMessages ?? 500;
  }

  submit(write: EmailWrite): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.pump();
    });
  }

  private pump() {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const group: Pending[] = [];
      let messages = 0;
      while (
        this.queue.length > 0 &&
        (group.length === 0 || messages + this.queue[0].write.emails.length <= this.maxMessages)
      ) {
        const next = this.queue.shift() as Pending;
        messages += next.write.emails.length;
        group.push(next);
      }
      this.inFlight++;
      void this.commit(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async commit(group: Pending[]) {
    try {
      await write(this.db, merge(group.map((p) => p.write)));
      for (const p of group) p.resolve();
    } catch (err) {
      if (group.length === 1) {
        group[0].reject(err);
        return;
      }
      await Promise.all(group.map((p) => write(this.db, p.write).then(p.resolve, p.reject)));
    }
  }
}

/** One statement when there are no attachments; otherwise a transaction around two. */
export function write(db: Db, w: EmailWrite): Promise<void> {
  return w.attachments.length > 0 ? db.transaction().execute((tx) => applyWrite(tx, w)) : applyWrite(db, w);
}

function merge(writes: EmailWrite[]): EmailWrite {
  return {
    emails: writes.flatMap((w) => w.emails),
    attachments: writes.flatMap((w) => w.attachments),
    events: writes.flatMap((w) => w.events),
    usage: sumUsage(writes.flatMap((w) => w.usage)),
    jobs: writes.flatMap((w) => w.jobs),
    immediate: writes.flatMap((w) => w.immediate),
  };
}

function sumUsage(usage: EmailWrite['usage']): EmailWrite['usage'] {
  const byProject = new Map<string, EmailWrite['usage'][number]>();
  for (const u of usage) {
    const sum = byProject.get(u.projectId);
    if (sum) {
      sum.total += u.total;
      sum.onSharedDomain += u.onSharedDomain;
    } else byProject.set(u.projectId, { ...u });
  }
  return [...byProject.values()];
}
