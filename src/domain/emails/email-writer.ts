import type { Db } from '../../db/database.ts';
import type { AcceptWriter } from '../core/context.ts';
import { GroupCommit } from '../core/group-commit.ts';
import { applyWrite, type EmailWrite } from './write.ts';

/** The most messages one merged write carries; a write larger than that still goes alone. */
const MAX_MESSAGES_PER_GROUP = 500;

/**
 * Group commit for accepted email. Every accept must commit its rows and delivery jobs before it is
 * answered, and each graphile-worker `add_jobs` ends in a NOTIFY that serialises commits across the
 * whole database (a few hundred a second). So accepts that arrive while a commit is in flight wait
 * and go together in the next transaction: one statement, one commit, one NOTIFY, one fsync for
 * many requests, and every request is still answered only after its own rows are durable. If a
 * merged transaction fails, each write is retried alone so one bad write cannot fail the others.
 */
export class EmailWriter extends GroupCommit<EmailWrite, void> implements AcceptWriter<EmailWrite> {
  constructor(db: Db) {
    super(
      async (writes) => {
        await write(db, merge(writes));
        return writes.map(() => undefined);
      },
      { maxInFlight: 2, maxWeight: MAX_MESSAGES_PER_GROUP, weight: (w) => w.emails.length },
    );
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
