import { type Selectable, sql } from 'kysely';
import { expect } from 'vitest';
import type { EmailStatus, EmailsTable } from '../../src/db/schema.ts';
import { eventually } from './eventually.ts';
import type { TestServer } from './server.ts';
import type { SinkMessage } from './smtp-sink.ts';

export { expectError } from './assertions.ts';

export const FROM = 'Posthorn Tests <onboarding@posthorn.localhost>';

/**
 * A sending domain of the project, verified without DNS (the verification itself has its own
 * tests), and checked just now, so that the hourly re-check leaves it alone.
 */
export async function insertVerifiedDomain(server: TestServer, projectId: string, name: string) {
  return server.runtime.ctx.db
    .insertInto('domains')
    .values({
      project_id: projectId,
      name,
      status: 'verified',
      verified_at: new Date(),
      last_checked_at: new Date(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

/** Polls GET /v1/emails/{id} until the status is reached (or fails with the last state seen). */
export function waitForStatus(
  server: TestServer,
  key: string,
  id: string,
  status: string,
  timeoutMs = 20_000,
) {
  return untilStatus(server, key, `/v1/emails/${id}`, status, timeoutMs, `email ${id}`, (email) =>
    JSON.stringify(email?.events),
  );
}

/** Waits (up to two minutes) until every one of the emails `ids` has `status` (a crash test's end). */
export async function waitForAllStatus(server: TestServer, ids: string[], status: string, what: string) {
  await eventually(
    async () => {
      const row = await server.runtime.ctx.db
        .selectFrom('emails')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('id', 'in', ids)
        .where('status', '!=', status as never)
        .executeTakeFirstOrThrow();
      expect(Number(row.n), `emails not ${status} yet`).toBe(0);
    },
    { timeoutMs: 120_000, intervalMs: 250, message: what },
  );
}

/** Polls GET /v1/campaigns/{id} until the status is reached (or fails with the last state seen). */
export function waitForCampaignStatus(
  server: TestServer,
  key: string,
  id: string,
  status: string,
  timeoutMs = 60_000,
) {
  return untilStatus(server, key, `/v1/campaigns/${id}`, status, timeoutMs, `campaign ${id}`, (campaign) =>
    JSON.stringify(campaign?.stats ?? null),
  );
}

async function untilStatus(
  server: TestServer,
  key: string,
  path: string,
  status: string,
  timeoutMs: number,
  what: string,
  detail: (body: any) => string,
) {
  return eventually(
    async () => {
      const body = (await server.call('GET', path, { key })).body;
      if (body?.status !== status) throw new Error(`last: ${JSON.stringify(body?.status)} ${detail(body)}`);
      return body;
    },
    { timeoutMs, intervalMs: 100, message: `${what} never reached ${status}` },
  );
}

/** The header block of a raw message with folded lines joined (folding only adds whitespace before the break). */
export function unfoldedHeaders(raw: Buffer): string {
  const text = raw.toString('latin1');
  return text
    .slice(0, text.indexOf('\r\n\r\n'))
    .replace(/\r\n[ \t]+/g, ' ')
    .replace(/\r\n/g, '\n');
}

/** The messages of one campaign among a sink's (its Feedback-ID names the campaign). */
export function campaignMessages(messages: SinkMessage[], campaignId: string): SinkMessage[] {
  return messages.filter((m) => String(m.parsed.headers.get('feedback-id') ?? '').includes(campaignId));
}

/** Records messages a project has sent today (in one usage shard, 0 unless named), as if it had sent them. */
export async function addUsageToday(
  server: TestServer,
  projectId: string,
  counts: { sent: number; shared_domain_sent?: number; shard?: number },
) {
  // added to what that shard already holds: a send earlier in the test may have written to it
  await server.runtime.ctx.db
    .insertInto('sending_usage')
    .values({ project_id: projectId, day: new Date().toISOString().slice(0, 10), shard: 0, ...counts })
    .onConflict((oc) =>
      oc.columns(['project_id', 'day', 'shard']).doUpdateSet((eb) => ({
        sent: eb('sending_usage.sent', '+', eb.ref('excluded.sent')),
        shared_domain_sent: eb(
          'sending_usage.shared_domain_sent',
          '+',
          eb.ref('excluded.shared_domain_sent'),
        ),
      })),
    )
    .execute();
}

/** How many emails the projects hold (the service's own mail, stream `system`, left out). */
export async function countEmails(server: TestServer): Promise<number> {
  const row = await server.runtime.ctx.db
    .selectFrom('emails')
    .where('stream', '!=', 'system')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Polls the newest of the service's own emails to an address (an emails row of the stream
 * `system`) until the status is reached.
 */
export async function waitForSystemEmail(
  server: TestServer,
  to: string,
  status: EmailStatus,
  timeoutMs = 20_000,
): Promise<Selectable<EmailsTable>> {
  return eventually(
    async () => {
      const last = await server.runtime.ctx.db
        .selectFrom('emails')
        .selectAll()
        .where('stream', '=', 'system')
        .where(sql<boolean>`${to} = any(to_addresses)`)
        .orderBy('created_at', 'desc')
        .executeTakeFirst();
      if (last?.status !== status)
        throw new Error(`last: ${JSON.stringify(last && { ...last, text_body: undefined })}`);
      return last;
    },
    { timeoutMs, intervalMs: 25, message: `no system email to ${to} reached ${status}` },
  );
}

/** A mailauth resolver that knows only the shared domain's DKIM key (read from the test database). */
export async function sharedDkimResolver(server: TestServer) {
  const row = await server.runtime.ctx.db
    .selectFrom('dkim_keys')
    .selectAll()
    .where('project_id', 'is', null)
    .executeTakeFirstOrThrow();
  const lookups: string[] = [];
  const resolver = async (name: string, type: string) => {
    lookups.push(`${type} ${name}`);
    if (type === 'TXT' && name === `${row.selector}._domainkey.${row.domain}`)
      return [[`v=DKIM1; k=rsa; p=${row.public_key}`]];
    throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
  };
  return { resolver, lookups, key: row };
}
