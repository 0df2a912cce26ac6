import { createHash } from 'node:crypto';
import { enqueue, type JobSpec } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import { resendDeliveries } from './resend-dialect.ts';

/**
 * A webhook event before fan-out: its type, project, time, the `data` object, and `key`, which
 * tells it apart from the other events of the same job (the email event's or the subject's id).
 */
export interface WebhookEvent {
  type: string;
  key: string;
  projectId: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

/**
 * Fans events out to the endpoints subscribed to them: one delivery row (with a stable
 * `webhook-id`) and one delivery job each, committed together. `occurrence` names the job doing it
 * (stable when that job runs again): the delivery's key and webhook-id derive from it, the event's
 * key and the endpoint, so a second run adds no delivery and sends nothing twice.
 */
export async function fanOut(
  ctx: Pick<DomainContext, 'config' | 'db'>,
  events: WebhookEvent[],
  occurrence: string,
): Promise<number> {
  if (events.length === 0) return 0;
  const endpoints = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['id', 'project_id', 'events', 'dialect'])
    .where('project_id', 'in', [...new Set(events.map((e) => e.projectId))])
    .where('enabled', '=', true)
    .execute();
  const deliveries = events.flatMap((e) =>
    endpoints
      .filter((ep) => ep.project_id === e.projectId)
      // an endpoint made through the Resend door may be sent more than one (resend-dialect.ts)
      .flatMap((ep) =>
        (ep.dialect === 'resend'
          ? resendDeliveries(e.type, e.data)
          : [{ subscription: e.type, type: e.type, data: e.data }]
        )
          .filter((d) => ep.events.includes(d.subscription))
          .map(({ subscription, ...body }) => {
            const fanoutKey = createHash('sha256')
              .update(`${occurrence}\n${subscription}\n${e.key}\n${ep.id}`)
              .digest('hex');
            return {
              endpoint_id: ep.id,
              project_id: e.projectId,
              message_id: `msg_${fanoutKey.slice(0, 32)}`,
              fanout_key: fanoutKey,
              event_type: subscription,
              payload: JSON.stringify({ created_at: e.createdAt.toISOString(), ...body }),
            };
          }),
      ),
  );
  if (deliveries.length === 0) return 0;
  const delay = ctx.config.webhookSchedule[0] ?? 0;
  return ctx.db.transaction().execute(async (tx) => {
    const ids: string[] = [];
    // in chunks: a statement takes at most 65,535 parameters (6 a row here)
    for (let i = 0; i < deliveries.length; i += 5_000) {
      const rows = await tx
        .insertInto('webhook_deliveries')
        .values(deliveries.slice(i, i + 5_000))
        .onConflict((oc) => oc.column('fanout_key').doNothing())
        .returning('id')
        .execute();
      ids.push(...rows.map((r) => r.id));
    }
    // only what this run added gets a delivery job: a second run finds the rows and adds none
    const jobs: JobSpec[] = ids.map((id) => ({
      task: 'webhook_deliver',
      payload: { delivery_id: id },
      runAt: delay > 0 ? new Date(Date.now() + delay * 1000) : null,
      maxAttempts: 3,
    }));
    await enqueue(tx, jobs);
    return ids.length;
  });
}
