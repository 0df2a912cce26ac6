import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRoutes } from '../../src/delivery/routes/config.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The feedback simulator (issue 33, item 4): a `simulated` route answers each recipient itself,
 * hard-bouncing and complaining at the rates it is given, through the same events, suppressions
 * and breaker counts as real answers; the same message meets the same answer again.
 */

const DOMAIN = 'simulated.example';
const COUNT = 1_000;

let server: TestServer;
let key: string;

beforeAll(async () => {
  const routesFile = path.join(tmpdir(), `simulated-routes-${process.pid}.json`);
  writeFileSync(
    routesFile,
    JSON.stringify({
      routes: { sim: { type: 'simulated', bounce_rate: 4, complaint_rate: 1 } },
      rules: [{ match: {}, routes: ['sim'] }],
    }),
  );
  server = await startTestServer({ POSTHORN_SMTP_RELAY: '', POSTHORN_ROUTES: routesFile });
  const account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await insertVerifiedDomain(server, account.project.id, DOMAIN);
}, 60_000);
afterAll(() => server?.close());

describe('the feedback simulator', () => {
  it('checks its rates', () => {
    expect(() =>
      parseRoutes({
        routes: { sim: { type: 'simulated', bounce_rate: 80, complaint_rate: 30 } },
        rules: [{ match: {}, routes: ['sim'] }],
      }),
    ).toThrow(/routes\.sim: bounce_rate and complaint_rate together must be at most 100/);
    expect(() =>
      parseRoutes({
        routes: { sim: { type: 'simulated', bounce_rate: -1 } },
        rules: [{ match: {}, routes: ['sim'] }],
      }),
    ).toThrow(/routes\.sim\.bounce_rate: must be a percentage from 0 to 100/);
  });

  it('bounces and complains at the rates it is given, as real answers do', async () => {
    const ids: string[] = [];
    for (let i = 0; i < COUNT; i += 100) {
      const batch = Array.from({ length: 100 }, (_, j) => ({
        from: `Notices <notices@${DOMAIN}>`,
        to: `person${i + j}@customers.example`,
        subject: 'A notice',
        text: 'Hello',
      }));
      const res = await server.call('POST', '/v1/emails/batch', { key, body: batch });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(...res.body.data.map((e: { id: string }) => e.id));
    }
    await eventually(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from emails
           where id = any(${ids}::uuid[]) and status in ('queued', 'sending', 'deferred')`.execute(
          server.runtime.ctx.db,
        );
        expect(rows[0].n).toBe(0);
      },
      { timeoutMs: 120_000, intervalMs: 250, message: 'every message answered' },
    );
    const { rows } = await sql<{ status: string; n: number }>`
      select status, count(*)::int as n from emails where id = any(${ids}::uuid[]) group by status`.execute(
      server.runtime.ctx.db,
    );
    const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    console.log(
      `feedback simulator, ${COUNT} messages at 4 % bounces and 1 % complaints: ${JSON.stringify(by)}`,
    );
    expect((by.bounced ?? 0) + (by.complained ?? 0) + (by.delivered ?? 0)).toBe(COUNT);
    // about 40 and 10: well within what chance gives 1,000 messages
    expect(by.bounced).toBeGreaterThanOrEqual(20);
    expect(by.bounced).toBeLessThanOrEqual(60);
    expect(by.complained).toBeGreaterThanOrEqual(2);
    expect(by.complained).toBeLessThanOrEqual(22);
    // each bounce is a hard one, marked as the simulator's (what the breaker counts); nothing real
    // was refused, so no address is suppressed
    const { rows: events } = await sql<{ type: string; hard: boolean; simulated: boolean; n: number }>`
      select ev.type, ev.detail->>'bounce_type' = 'hard' as hard, (ev.detail->>'simulated')::boolean as simulated,
             count(*)::int as n
        from email_events ev where ev.email_id = any(${ids}::uuid[]) and ev.type in ('bounced', 'complained')
       group by 1, 2, 3`.execute(server.runtime.ctx.db);
    expect(events).toEqual(
      expect.arrayContaining([
        { type: 'bounced', hard: true, simulated: true, n: by.bounced },
        { type: 'complained', hard: null, simulated: true, n: by.complained },
      ]),
    );
    const { rows: suppressed } = await sql<{
      n: number;
    }>`select count(*)::int as n from suppressions`.execute(server.runtime.ctx.db);
    expect(suppressed[0].n).toBe(0);
  });
});
