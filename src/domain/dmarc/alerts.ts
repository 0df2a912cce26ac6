import { enqueue } from '../../db/enqueue.ts';
import { addDays } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import { projectsWithWebhooks } from '../webhooks/subscribed.ts';
import { seriesOver, sourcesOver } from './overview.ts';
import { knownSources } from './sources.ts';

/**
 * What a domain's new aggregate report may announce (issue 34), each once per domain:
 * - `dmarc.unknown_source`: a source neither Posthorn's nor labelled sent at least
 *   UNKNOWN_SOURCE_MESSAGES messages as the domain over the 30 days up to the report;
 * - `dmarc.alignment_dropped`: on the report's day the known sources' mail was under 95 % aligned,
 *   at least 5 points below the 7 days before (each with at least ALIGNMENT_MIN_MESSAGES messages).
 * Only authenticated reports count (sourcesOver, seriesOver; issue 47): a forged report neither
 * raises an alert nor queues the job that judges them (store.ts).
 */

export const UNKNOWN_SOURCE_MESSAGES = 10;
const ALIGNMENT_MIN_MESSAGES = 10;
const ALIGNMENT_FLOOR = 0.95;
const ALIGNMENT_DROP = 0.05;

type Ctx = Pick<DomainContext, 'db' | 'config'>;

interface Alert {
  kind: 'unknown_source' | 'alignment_dropped';
  key: string;
  detail: Record<string, unknown>;
}

async function alertsOn(ctx: Ctx, domainId: string, day: string): Promise<Alert[]> {
  const domain = await ctx.db.selectFrom('domains').selectAll().where('id', '=', domainId).executeTakeFirst();
  if (!domain) return []; // removed since the report came
  const known = await knownSources(ctx, domain);
  const alerts: Alert[] = [];
  const month = await sourcesOver(ctx, domain, known, addDays(day, -29), day);
  for (const s of month)
    if (s.kind === 'unknown' && s.messages >= UNKNOWN_SOURCE_MESSAGES)
      alerts.push({ kind: 'unknown_source', key: s.source_ip, detail: { ...s, kind: undefined } });
  const series = await seriesOver(ctx, domainId, month, addDays(day, -7), day);
  const today = series[series.length - 1];
  const before = series
    .slice(0, -1)
    .reduce(
      (sum, d) => ({ messages: sum.messages + d.known_messages, aligned: sum.aligned + d.known_aligned }),
      { messages: 0, aligned: 0 },
    );
  if (today.known_messages >= ALIGNMENT_MIN_MESSAGES && before.messages >= ALIGNMENT_MIN_MESSAGES) {
    const rate = today.known_aligned / today.known_messages;
    const previous = before.aligned / before.messages;
    if (rate < ALIGNMENT_FLOOR && previous - rate >= ALIGNMENT_DROP)
      alerts.push({
        kind: 'alignment_dropped',
        key: day,
        detail: {
          day,
          known_messages: today.known_messages,
          known_aligned: today.known_aligned,
          rate,
          previous_rate: previous,
        },
      });
  }
  return alerts;
}

/** The dmarc_alerts job, for a report of `day` just stored: record the new alerts and announce them. */
export async function alertOnDay(ctx: Ctx, domainId: string, day: string): Promise<number> {
  const alerts = await alertsOn(ctx, domainId, day);
  if (alerts.length === 0) return 0;
  return ctx.db.transaction().execute(async (tx) => {
    const inserted = await tx
      .insertInto('dmarc_alerts')
      .values(
        alerts.map((a) => ({
          domain_id: domainId,
          kind: a.kind,
          key: a.key,
          detail: JSON.stringify(a.detail),
        })),
      )
      .onConflict((oc) => oc.columns(['domain_id', 'kind', 'key']).doNothing())
      .returning('id')
      .execute();
    if (inserted.length === 0) return 0;
    const domain = await tx
      .selectFrom('domains')
      .select('project_id')
      .where('id', '=', domainId)
      .executeTakeFirstOrThrow();
    if ((await projectsWithWebhooks(tx, [domain.project_id])).has(domain.project_id))
      await enqueue(tx, [
        { task: 'webhook_dispatch', payload: { dmarc_alert_ids: inserted.map((r) => r.id) } },
      ]);
    return inserted.length;
  });
}
