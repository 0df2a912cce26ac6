import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';

/**
 * Batches whose attachments are given by `path` (issue 47, Build 2): a permissive batch fetches
 * its files as a strict one does, several at once, and its idempotent replay answers exactly what
 * the first answer said, without fetching anything again.
 */

const SLOW_TOGETHER = 3;
/** What the file server has seen: fetches by path, those open now and at most. */
const fetched: string[] = [];
let open = 0;
let most = 0;
let held: ServerResponse[] = [];

// a slow file is answered once three are waiting together, or after 2 s alone
const answerHeld = () => {
  for (const res of held) res.writeHead(200, { 'content-type': 'text/plain' }).end('slow file');
  held = [];
};
const files = createServer((req, res) => {
  fetched.push(req.url ?? '');
  open++;
  most = Math.max(most, open);
  res.on('close', () => open--);
  if (req.url?.startsWith('/slow/')) {
    held.push(res);
    if (held.length === SLOW_TOGETHER) answerHeld();
    else setTimeout(() => held.includes(res) && answerHeld(), 2000);
  } else if (req.url === '/doc.txt') res.writeHead(200, { 'content-type': 'text/plain' }).end('a document');
  else res.writeHead(404).end();
});

let server: TestServer;
let key: string;
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  key = (await unlimitedSender(server)).project_key.key;
}, 60_000);
afterAll(async () => {
  await server?.close();
  files.close();
});
beforeEach(async () => {
  await eventually(() => open === 0, { message: 'fetches still open' });
  fetched.length = 0;
  most = 0;
});

const EMAIL = { from: 'Tests <onboarding@posthorn.localhost>', to: 'a@b.example', text: 'x' };
const withFile = (subject: string, path: string) => ({
  ...EMAIL,
  subject,
  attachments: [{ path: `${base}${path}` }],
});
const permissive = (body: unknown, headers: Record<string, string> = {}) =>
  server.call('POST', '/resend/emails/batch', {
    key,
    body,
    headers: { 'x-batch-validation': 'permissive', ...headers },
  });

describe('attachments by URL in batches', () => {
  it('fetches the files of a permissive batch at once, as a strict one does', async () => {
    const res = await permissive(['a', 'b', 'c'].map((n) => withFile(n, `/slow/${n}.txt`)));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toHaveLength(3);
    expect(res.body.errors).toEqual([]);
    // the three were open at the file server together
    expect(most).toBe(SLOW_TOGETHER);
  });

  it("replays a permissive batch's answer exactly, each refusal at its message's index", async () => {
    const headers = { 'Idempotency-Key': `permissive-${Date.now()}` };
    const body = [
      withFile('zero', '/doc.txt'),
      { ...EMAIL, subject: 'one', to: 'nobody' },
      withFile('two', '/doc.txt'),
      withFile('three', '/gone.pdf'),
      { ...EMAIL, subject: 'four' },
    ];
    const first = await permissive(body, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.errors).toEqual([
      { index: 1, message: expect.stringMatching(/`to`/) },
      { index: 3, message: expect.stringMatching(/^`attachments\[0\]\.path`: .*answered 404$/) },
    ]);
    const subjects = await Promise.all(
      first.body.data.map(
        async (d: { id: string }) => (await server.call('GET', `/v1/emails/${d.id}`, { key })).body.subject,
      ),
    );
    expect(subjects).toEqual(['zero', 'two', 'four']);
    const fetches = fetched.length;

    const again = await permissive(body, headers);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // answered from what was stored, before any file is fetched again
    expect(fetched).toHaveLength(fetches);
    // the same body in strict mode is another request
    const strict = await server.call('POST', '/resend/emails/batch', { key, body, headers });
    expect(strict.status, JSON.stringify(strict.body)).toBe(409);
    expect(strict.body.message).toMatch(/Idempotency-Key/);
  });

  it('replays a strict batch without fetching its files again', async () => {
    const headers = { 'Idempotency-Key': `strict-${Date.now()}` };
    const body = [withFile('zero', '/doc.txt'), withFile('one', '/doc.txt')];
    const first = await server.call('POST', '/v1/emails/batch', { key, body, headers });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(fetched).toHaveLength(2);
    const again = await server.call('POST', '/v1/emails/batch', { key, body, headers });
    expect(again.body).toEqual(first.body);
    expect(fetched).toHaveLength(2);
  });
});
