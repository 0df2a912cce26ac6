import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { enqueue, type JobSpec } from '../../db/enqueue.ts';
import type { DomainContext } from '../core/context.ts';
import { newWebhookSecret } from '../webhooks/signing.ts';
import { FLOW_WEBHOOK_EVENT } from './definition.ts';
import type { PlannedWebhook } from './steps.ts';
import { callableFlows } from './webhook-rights.ts';

export { FLOW_WEBHOOK_EVENT } from './definition.ts';

/**
 * `webhook` steps: a signed POST through the webhooks machinery. Each call is a delivery of the
 * project's webhook endpoint for that URL (event type `flow.step`), so it is signed with that
 * endpoint's secret (Standard Webhooks headers), attempted by the `webhook_deliver` job with its
 * retry schedule and SSRF rules, and logged with the endpoint's deliveries. An endpoint registered
 * with POST /v1/webhooks for the URL is used as it is (the receiver already knows its secret);
 * without one, the engine registers it once, subscribed to no event (it carries only flow calls),
 * and its secret is obtained with POST /v1/webhooks/{id}/secret/rotate.
 */

const AUTO_DESCRIPTION = 'Flow webhook steps (registered by the flow engine)';

/** The endpoint for a project's URL, registered once when the project has none. */
async function endpointFor(
  tx: Tx,
  ctx: Pick<DomainContext, 'db' | 'secrets'>,
  projectId: string,
  url: string,
): Promise<string> {
  const find = () =>
    tx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('project_id', '=', projectId)
      .where('url', '=', url)
      .orderBy('enabled', 'desc')
      .orderBy('created_at')
      .executeTakeFirst();
  const found = await find();
  if (found) return found.id;
  // two batches must not register the same URL twice
  await sql`select pg_advisory_xact_lock(hashtextextended(${`flow-webhook:${projectId}:${url}`}, 0))`.execute(
    tx,
  );
  const again = await find();
  if (again) return again.id;
  const created = await tx
    .insertInto('webhook_endpoints')
    .values({
      project_id: projectId,
      url,
      events: [],
      description: AUTO_DESCRIPTION,
      secret_enc: ctx.secrets.encrypt(newWebhookSecret()),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return created.id;
}

/**
 * The calls a flow may still make (webhook-rights.ts `callableFlows`: active, its webhook steps'
 * owner still holding the role): the others make none, and their history says `flow_paused`.
 */
async function stillActive(tx: Tx, planned: PlannedWebhook[]): Promise<PlannedWebhook[]> {
  const callable = await callableFlows(tx, [...new Set(planned.map((p) => p.walker.row.flow_id))]);
  for (const p of planned) if (!callable.has(p.walker.row.flow_id)) p.entry.outcome = 'flow_paused';
  return planned.filter((p) => callable.has(p.walker.row.flow_id));
}

/** The batch's webhook calls: one delivery row and one `webhook_deliver` job each, in its transaction. */
export async function queueWebhooks(
  tx: Tx,
  ctx: DomainContext,
  all: PlannedWebhook[],
  now: Date,
): Promise<void> {
  if (all.length === 0) return;
  const planned = await stillActive(tx, all);
  if (planned.length === 0) return;
  const endpoints = new Map<string, string>();
  const rows = [];
  for (const { walker: w, url, step_id } of planned) {
    const target = new URL(url).toString();
    const key = `${w.row.project_id} ${target}`;
    let endpointId = endpoints.get(key);
    if (!endpointId) {
      endpointId = await endpointFor(tx, ctx, w.row.project_id, target);
      endpoints.set(key, endpointId);
    }
    const hash = createHash('sha256')
      .update(`flow:${w.row.id}\n${step_id}\n${now.toISOString()}`)
      .digest('hex');
    const data = {
      flow_id: w.row.flow_id,
      step_id,
      enrollment_id: w.row.id,
      contact: {
        id: w.row.contact_id,
        object: 'contact',
        email: w.row.email,
        first_name: w.row.first_name,
        last_name: w.row.last_name,
        properties: w.properties,
        subscribed: w.row.subscribed,
      },
    };
    rows.push({
      endpoint_id: endpointId,
      project_id: w.row.project_id,
      message_id: `msg_${hash.slice(0, 32)}`,
      fanout_key: hash,
      event_type: FLOW_WEBHOOK_EVENT,
      payload: JSON.stringify({ type: FLOW_WEBHOOK_EVENT, created_at: now.toISOString(), data }),
    });
  }
  const inserted = await tx
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.column('fanout_key').doNothing())
    .returning('id')
    .execute();
  const delay = ctx.config.webhookSchedule[0] ?? 0;
  const jobs: JobSpec[] = inserted.map((r) => ({
    task: 'webhook_deliver',
    payload: { delivery_id: r.id },
    runAt: delay > 0 ? new Date(now.getTime() + delay * 1000) : null,
    maxAttempts: 3,
  }));
  await enqueue(tx, jobs);
}
