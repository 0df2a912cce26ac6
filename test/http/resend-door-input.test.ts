import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Bad input at the Resend-compatible door (issue 35): every refusal is a 4xx in Resend's error
 * shape, `{statusCode, name, message}`, with a message that says what was wrong, and writes
 * nothing; an unknown path is Resend's `not_found`, a missing key `missing_api_key`.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let allAccess: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  // Resend's full-access key, which may manage API keys too
  allAccess = (
    await createKeyInProject(server.runtime.ctx, { accountId: account.account.id }, account.project.id, {
      name: 'door',
      scope: 'all_access',
    })
  ).key as string;
}, 60_000);
afterAll(() => server?.close());

const UUID = '00000000-0000-4000-8000-000000000000';
const EMAIL = { from: 'Tests <onboarding@posthorn.localhost>', to: 'a@b.example', subject: 'S', text: 'x' };

const CASES: [string, string, unknown, number, RegExp][] = [
  // Resend's 422 missing_required_field (issue 51)
  ['POST', '/emails', { from: 'a@b.example' }, 422, /to/],
  ['POST', '/emails', { ...EMAIL, scheduled_at: 'some day' }, 400, /scheduled_at/],
  ['POST', '/emails', { ...EMAIL, attachments: [{ filename: 'a' }] }, 400, /content.*path/],
  ['POST', '/emails', { ...EMAIL, attachments: [{ path: 'ftp://files.example/a' }] }, 400, /https/],
  ['POST', '/emails/batch', [], 400, /fewer than 1|at least 1|must NOT have fewer/],
  ['GET', '/emails?after=not-an-id', undefined, 400, /`after` must be the id/],
  ['GET', '/emails?limit=500', undefined, 400, /limit/],
  ['GET', `/emails/${UUID}`, undefined, 404, /not found/],
  ['PATCH', `/emails/${UUID}`, { scheduled_at: 'in 1 hour' }, 404, /not found/],
  ['POST', '/domains', { name: 'not a domain' }, 400, /domain/i],
  ['POST', '/domains', { name: 'x.example', tracking_subdomain: 'links' }, 400, /tracking_subdomain/],
  ['PATCH', `/domains/${UUID}`, { capabilities: { receiving: 'maybe' } }, 400, /receiving/],
  ['POST', '/api-keys', { name: 'k', domain_id: UUID }, 400, /domain_id/],
  ['POST', '/api-keys', { name: 'k', permission: 'root' }, 400, /permission/],
  ['POST', '/contacts', { email: 'not an address' }, 400, /email/],
  ['GET', `/contacts/${UUID}`, undefined, 404, /not found/],
  ['POST', '/contacts', { email: 'kept-out@example.org', segments: [UUID] }, 404, /not found/],
  ['POST', '/segments', { name: '' }, 400, /name/],
  [
    'POST',
    '/broadcasts',
    // a topic not of the project (Posthorn's campaign topic)
    { from: 'onboarding@posthorn.localhost', subject: 'S', html: '<p>x</p>', topic_id: 't' },
    400,
    /topic_id/,
  ],
  ['GET', `/broadcasts/${UUID}/recipients?type=nothing`, undefined, 404, /not found/],
  [
    'POST',
    '/webhooks',
    { endpoint: 'https://hooks.example/x', events: ['email.scheduled'] },
    400,
    /email\.scheduled is not available/,
  ],
  ['POST', '/webhooks', { endpoint: 'not a url', events: ['email.sent'] }, 400, /URL/],
  ['PATCH', `/webhooks/${UUID}`, { status: 'paused' }, 400, /status/],
  ['POST', `/emails/${UUID}/share`, undefined, 405, /Posthorn has no public share links/],
  ['GET', '/not-a-resource', undefined, 404, /does not exist/],
];

describe('refusals at /resend', () => {
  it.each(CASES)('%s %s %j → %i', async (method, path, body, status, message) => {
    const before = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const res = await server.call(method, `/resend${path}`, { key: allAccess, body });
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body).toEqual({
      statusCode: status,
      name: expect.any(String),
      message: expect.stringMatching(message),
    });
    expect(res.body.message).not.toMatch(/\n\s+at /);
    const after = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    const contacts = await server.call('GET', '/resend/contacts', { key: allAccess });
    expect(contacts.body.data).toEqual([]);
  });

  it('refuses in a permissive batch only the message whose attachment cannot be fetched', async () => {
    const res = await server.call('POST', '/resend/emails/batch', {
      key,
      headers: { 'x-batch-validation': 'permissive' },
      body: [
        { ...EMAIL, attachments: [{ path: 'ftp://files.example/a.pdf' }] },
        { ...EMAIL, subject: 'Kept' },
        { ...EMAIL, to: 'nobody' },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.errors).toEqual([
      { index: 0, message: expect.stringMatching(/^`attachments\[0\]\.path` must use https/) },
      { index: 2, message: expect.stringMatching(/to/) },
    ]);
  });

  it('keeps no broadcast whose sending is refused', async () => {
    const list = await server.call('POST', '/resend/segments', { key, body: { name: 'Empty' } });
    const res = await server.call('POST', '/resend/broadcasts', {
      key,
      body: { segment_id: list.body.id, from: EMAIL.from, subject: 'S', html: '<p>x</p>', send: true },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'validation_error' });
    expect((await server.call('GET', '/resend/broadcasts', { key })).body.data).toEqual([]);
  });

  it('names errors as Resend does: missing or invalid key, not found, validation', async () => {
    expect((await server.call('GET', '/resend/emails')).body).toMatchObject({
      statusCode: 401,
      name: 'missing_api_key',
    });
    expect((await server.call('GET', '/resend/emails', { key: 'ph_nope' })).body).toMatchObject({
      statusCode: 401,
      name: 'invalid_api_key',
    });
    expect((await server.call('GET', `/resend/domains/${UUID}`, { key })).body).toMatchObject({
      name: 'not_found',
    });
    expect((await server.call('POST', '/resend/segments', { key, body: {} })).body).toMatchObject({
      statusCode: 422,
      name: 'missing_required_field',
    });
    expect((await server.call('POST', '/resend/segments', { key, body: { name: 7 } })).body).toMatchObject({
      statusCode: 400,
      name: 'validation_error',
    });
    expect((await server.call('GET', '/resend/api-keys', { key })).body).toMatchObject({
      statusCode: 401,
      name: 'restricted_api_key',
    });
  });

  it('refuses a `from` on a domain that is not verified as Resend does (403 validation_error), and writes nothing', async () => {
    const before = await server.call('GET', '/resend/emails', { key });
    for (const [path, body] of [
      ['/resend/emails', { ...EMAIL, from: 'Shop <news@not-verified.example>' }],
      ['/resend/emails/batch', [{ ...EMAIL, from: 'news@not-verified.example' }]],
    ] as const) {
      const res = await server.call('POST', path, { key, body });
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, name: 'validation_error' });
      expect(res.body.message).toMatch(/not-verified\.example.*verified domain/);
    }
    // the API of /v1 keeps its 400
    const v1 = await server.call('POST', '/v1/emails', {
      key,
      body: { ...EMAIL, from: 'news@not-verified.example' },
    });
    expect(v1.status).toBe(400);
    expect((await server.call('GET', '/resend/emails', { key })).body.data).toEqual(before.body.data);
  });
});
