import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { addJobs, BULK_PRIORITY } from '../../db/enqueue.ts';
import type { RouteView } from '../../delivery/routes/view.ts';
import { domainOf } from '../../mail/address.ts';
import { recordEmailEvents } from '../emails/events.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';

/**
 * Throttling of marketing and automation mail. A rate (messages per second and per hour, either
 * optional) applies per project (the default of its campaigns), per campaign (an override that
 * replaces the project's) and per sending domain; transactional mail is never throttled.
 *
 * Each bucket is one row of `send_rates` shared by every worker process: its `next_at` is the
 * earliest moment its next message may leave (GCRA with no burst). Messages of a bucket are spaced
 * at least `interval` apart, the interval being the stricter of the two rates (1000 ms / per
 * second, 3,600,000 ms / per hour), so no window of a second or an hour ever holds more than its
 * rate (plus the one message on its edge). Slots are taken in PostgreSQL's clock under the buckets'
 * row locks, by each process in runs for the messages it has ready (pace.ts), and only within
 * HORIZON_MS of now: a delivery job never holds a worker for long, and a message without a slot
 * goes back to the queue for when its bucket has room.
 */

/** How far ahead a delivery job may reserve slots (and so how long it may wait for them). */
export const HORIZON_MS = 1_000;
/** The most the spacing of messages is widened to absorb the jitter of handing them over. */
const JITTER_MS = 5;
/** How late a message may wake for its slot and still take it, at the least and at the most. */
const LATE_MS = 5;
const MAX_LATE_MS = 25;
export const MAX_RETAKES = 5;

export interface Rate {
  perSecond: number | null;
  perHour: number | null;
}

/** The share of its spacing a bucket's interval is widened by (at most JITTER_MS). */
const MARGIN = 0.02;

/**
 * The spacing between two messages of a bucket, or null for no limit: the stricter of the two
 * rates, widened by a margin (2%, at most JITTER_MS) so that the few milliseconds a hand-over may
 * vary never push one window over the rate where the mail arrives. The rate is a ceiling. (At 5%,
 * a route of 500/s could send at most 476/s: more than the 5% its operator may expect to lose.)
 */
export function intervalMs(rate: Rate): number | null {
  const spacing = Math.max(
    rate.perSecond ? 1000 / rate.perSecond : 0,
    rate.perHour ? 3_600_000 / rate.perHour : 0,
  );
  return spacing > 0 ? spacing + Math.min(spacing * MARGIN, JITTER_MS) : null;
}

export interface Bucket {
  key: string;
  intervalMs: number;
}

/** The rates that apply to a set of rows, looked up in one query per kind. */
export interface RateBook {
  projects: Map<string, Rate>;
  campaigns: Map<string, Rate>;
  /** by `project_id:domain name` */
  domains: Map<string, Rate>;
}

export const THROTTLED_STREAMS: EmailRow['stream'][] = ['marketing', 'automation'];

const rateOf = (r: { rate_per_second: number | null; rate_per_hour: number | null }): Rate => ({
  perSecond: r.rate_per_second,
  perHour: r.rate_per_hour,
});

/** The rates of the rows' projects, campaigns and sending domains (only those that set one). */
export async function rateBook(
  db: Db,
  rows: Pick<EmailRow, 'project_id' | 'campaign_id'>[],
): Promise<RateBook> {
  const projectIds = [...new Set(rows.map((r) => r.project_id))];
  const campaignIds = [...new Set(rows.flatMap((r) => (r.campaign_id ? [r.campaign_id] : [])))];
  const limited = (t: 'projects' | 'campaigns' | 'domains') =>
    db
      .selectFrom(t)
      .where((eb) => eb.or([eb('rate_per_second', 'is not', null), eb('rate_per_hour', 'is not', null)]));
  const [projects, campaigns, domains] = await Promise.all([
    limited('projects')
      .select(['id', 'rate_per_second', 'rate_per_hour'])
      .where('id', 'in', projectIds)
      .execute(),
    campaignIds.length === 0
      ? []
      : limited('campaigns')
          .select(['id', 'rate_per_second', 'rate_per_hour'])
          .where('id', 'in', campaignIds)
          .execute(),
    limited('domains')
      .select(['project_id', 'name', 'rate_per_second', 'rate_per_hour'])
      .where('project_id', 'in', projectIds)
      .execute(),
  ]);
  return {
    projects: new Map(projects.map((p) => [p.id, rateOf(p)])),
    campaigns: new Map(campaigns.map((c) => [c.id, rateOf(c)])),
    domains: new Map(domains.map((d) => [`${d.project_id}:${d.name.toLowerCase()}`, rateOf(d)])),
  };
}

/**
 * The buckets one row must respect: its campaign's (when the campaign overrides the rate) or else
 * its project's, and its sending domain's. Empty for transactional mail and unthrottled rows.
 */
export function bucketsOf(
  book: RateBook,
  row: Pick<EmailRow, 'stream' | 'project_id' | 'campaign_id' | 'from_address'>,
): Bucket[] {
  if (!THROTTLED_STREAMS.includes(row.stream)) return [];
  const buckets: Bucket[] = [];
  const add = (key: string, rate: Rate | undefined) => {
    const step = rate ? intervalMs(rate) : null;
    if (step !== null) buckets.push({ key, intervalMs: step });
  };
  const campaignRate = row.campaign_id ? book.campaigns.get(row.campaign_id) : undefined;
  if (campaignRate) add(`campaign:${row.campaign_id}`, campaignRate);
  else add(`project:${row.project_id}`, book.projects.get(row.project_id));
  const domain = domainOf(row.from_address).toLowerCase();
  add(`domain:${row.project_id}:${domain}`, book.domains.get(`${row.project_id}:${domain}`));
  return buckets;
}

/**
 * How late a message may wake for its slot and still take it, for a bucket set spaced `stepMs`
 * apart: what the margin of `intervalMs` leaves unused in a second (about 20 ms at 4/s and
 * faster, 5 ms at 1/s), between LATE_MS and MAX_LATE_MS, so a late message never puts a second
 * over its rate. Later than that, its slot is left empty and another taken. (At a flat 5 ms, a
 * busy event loop waking a few milliseconds late left a fast route's slots empty: 437 of 500/s.)
 */
export function lateAllowanceMs(stepMs: number): number {
  const margin = stepMs <= JITTER_MS / MARGIN + JITTER_MS ? stepMs - stepMs / (1 + MARGIN) : JITTER_MS;
  return Math.min(MAX_LATE_MS, Math.max(LATE_MS, (1000 / stepMs) * margin));
}

/** The pace of a campaign's writer: recipients per batch and when the next batch is due. */
export function writerPace(stepMs: number | null, maxBatch: number): { batch: number; aheadMs: number } {
  if (stepMs === null) return { batch: maxBatch, aheadMs: 0 };
  // about five seconds of sending per batch, written a couple of seconds before it is due
  const batch = Math.max(1, Math.min(maxBatch, Math.ceil(5_000 / stepMs)));
  return { batch, aheadMs: Math.max(0, batch * stepMs - 2_000) };
}

/**
 * The strictest spacing a campaign's messages will get (campaign or project rate, and domain), and
 * the strictest rate of the routes they may leave by, so a campaign through a limited route is
 * written as fast as it may leave and not handed back at delivery.
 */
export async function campaignStepMs(
  db: Db,
  campaign: { id: string; project_id: string; from_address: string },
  routes?: RouteView,
): Promise<number | null> {
  const routeSteps = routes
    ? routes
        .outboundFor({
          stream: 'marketing',
          projectId: campaign.project_id,
          fromDomain: domainOf(campaign.from_address).toLowerCase(),
        })
        .flatMap((route) => {
          const step = route.rate ? intervalMs(route.rate) : null;
          return step === null ? [] : [step];
        })
    : [];
  const book = await rateBook(db, [{ project_id: campaign.project_id, campaign_id: campaign.id }]);
  const buckets = bucketsOf(book, {
    stream: 'marketing',
    project_id: campaign.project_id,
    campaign_id: campaign.id,
    from_address: campaign.from_address,
  });
  const steps = [...buckets.map((b) => b.intervalMs), ...routeSteps];
  return steps.length === 0 ? null : Math.max(...steps);
}

/**
 * Rows that found no slot go back to `queued` (the attempt not counted), with one delivery job
 * for when their buckets have room (at the priority of transactional mail when it holds any),
 * which is their `next_attempt_at` (GET /v1/emails/{id} shows when it is tried again). A
 * row a site held (it asked to slow down) says so on its timeline: a `held` event with the site's
 * answer and `held_until`, which is also its `next_attempt_at`.
 */
export async function handBack(
  db: Db,
  rows: { id: string; atMs: number; bulk: boolean; held?: { projectId: string; response: string } }[],
) {
  if (rows.length === 0) return;
  const at = Math.max(...rows.map((r) => r.atMs));
  await db.transaction().execute(async (tx) => {
    const paced = rows.filter((r) => !r.held).map((r) => r.id);
    if (paced.length > 0)
      await tx
        .updateTable('emails')
        .set({ status: 'queued', attempts: sql`attempts - 1`, next_attempt_at: new Date(at) })
        .where('id', 'in', paced)
        .where('status', '=', 'sending')
        .execute();
    const held = rows.filter((r) => r.held);
    if (held.length > 0) {
      await sql`update emails e set status = 'queued', attempts = e.attempts - 1, next_attempt_at = u.at
                  from unnest(${held.map((r) => r.id)}::uuid[], ${held.map((r) => new Date(r.atMs))}::timestamptz[]) as u(id, at)
                 where e.id = u.id and e.status = 'sending'`.execute(tx);
      await recordEmailEvents(
        tx,
        held.map((r) => ({
          email_id: r.id,
          project_id: r.held?.projectId as string,
          type: 'held',
          recipient: null,
          detail: { held_until: new Date(r.atMs).toISOString(), response: r.held?.response },
        })),
      );
    }
    const bulk = rows.filter((r) => r.bulk).map((r) => r.id);
    const transactional = rows.filter((r) => !r.bulk).map((r) => r.id);
    await addJobs([
      ...(bulk.length
        ? [
            {
              task: 'deliver_email' as const,
              payload: { ids: bulk },
              runAt: new Date(at),
              priority: BULK_PRIORITY,
            },
          ]
        : []),
      ...(transactional.length
        ? [{ task: 'deliver_transactional' as const, payload: { ids: transactional }, runAt: new Date(at) }]
        : []),
    ]).execute(tx);
  });
}
