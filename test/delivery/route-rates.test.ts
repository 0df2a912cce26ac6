import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * A route's rate (issue 31, item 7): every message through the route, of any stream, keeps to its
 * `rate_per_second`, through the same PostgreSQL buckets the campaign throttles use (so every
 * worker process shares it); another route beside it is not held.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-route-rates-'));
let slow: SmtpSink;
let fast: SmtpSink;
let server: TestServer;
let key: string;

beforeAll(async () => {
  [slow, fast] = await Promise.all([startSmtpSink(), startSmtpSink()]);
  const file = path.join(dir, 'routes.json');
  writeFileSync(
    file,
    JSON.stringify({
      routes: {
        slow: { type: 'smtp', url: slow.url, rate_per_second: 4 },
        fast: { type: 'smtp', url: fast.url },
      },
      rules: [
        { match: { recipient_domain: 'fast.example.net' }, routes: ['fast'] },
        { match: {}, routes: ['slow'] },
      ],
    }),
  );
  server = await startTestServer({ POSTHORN_ROUTES: file, POSTHORN_SMTP_RELAY: '' });
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
  await Promise.all([slow?.close(), fast?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a route with rate_per_second', () => {
  it('spaces every message through it, transactional mail too, and holds no other route', async () => {
    const batch = (domain: string, count: number) =>
      server.call('POST', '/v1/emails/batch', {
        key,
        body: Array.from({ length: count }, (_, i) => ({
          from: FROM,
          to: `r${i}@${domain}`,
          subject: `Paced ${i}`,
          text: 'x',
        })),
      });
    const [paced, free] = await Promise.all([batch('slow.example.net', 13), batch('fast.example.net', 13)]);
    expect(paced.status, JSON.stringify(paced.body)).toBe(200);
    expect(free.status, JSON.stringify(free.body)).toBe(200);
    const ids = [...paced.body.data, ...free.body.data].map((e: { id: string }) => e.id);
    await Promise.all(ids.map((id) => waitForStatus(server, key, id, 'sent', 60_000)));

    // the service's own mail (the sign-up's code) leaves by the slow route too, unpaced: a code never waits
    const pacedMail = slow.messages.filter((m) => m.parsed.subject?.startsWith('Paced'));
    expect(pacedMail).toHaveLength(13);
    expect(fast.messages).toHaveLength(13);
    // at most 4 a second, plus the one on a window's edge: a message's slot is taken once the one
    // before it was handed over, so any six in a row span at least four intervals of 262.5 ms
    const times = pacedMail.map((m) => m.receivedAt).sort((a, b) => a - b);
    for (let i = 0; i + 5 < times.length; i++) expect(times[i + 5] - times[i]).toBeGreaterThanOrEqual(1_000);
    // the slow route's bucket is shared through PostgreSQL; the other route has none
    const buckets = await server.runtime.ctx.db.selectFrom('send_rates').select('bucket').execute();
    expect(buckets.map((b) => b.bucket).filter((b) => b.startsWith('route:'))).toEqual(['route:slow']);
  }, 120_000);
});
