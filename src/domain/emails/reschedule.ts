import { deliveryJobKey, deliveryTask, enqueue } from '../../db/enqueue.ts';
import { now } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { presentEmail } from './read.ts';
import { checkScheduledAt } from './validate.ts';

/**
 * Moves a scheduled message to another time (ISO 8601 or "in 1 hour", at most 30 days ahead; a
 * time past means now): its row and its delivery job change together, the job keeping its key so
 * it runs once. Only a message still scheduled can move; anything on its way is a 409.
 */
export async function rescheduleEmail(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
  scheduledAt: string,
) {
  const row = await findInProject(ctx.db, 'emails', 'Email', projectId, id);
  const at = checkScheduledAt(scheduledAt, now()) ?? new Date();
  const moved = await ctx.db.transaction().execute(async (tx) => {
    const updated = await tx
      .updateTable('emails')
      .set({ scheduled_at: at, updated_at: new Date() })
      .where('id', '=', id)
      .where('status', '=', 'scheduled')
      .returningAll()
      .executeTakeFirst();
    if (!updated) return null;
    await enqueue(tx, [
      { task: deliveryTask(updated.stream), payload: { ids: [id] }, runAt: at, jobKey: deliveryJobKey(id) },
    ]);
    return updated;
  });
  if (!moved) throw new ConflictError(`Only scheduled emails can be rescheduled; this one is ${row.status}`);
  return presentEmail(moved);
}
