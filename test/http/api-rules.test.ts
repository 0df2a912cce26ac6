import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { addUsageToday } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe('common rules', () => {
  it('GET /v1/ lists the endpoints without a key', async () => {
    const res = await server.call('GET', '/v1/');
    expect(res.status).toBe(200);
    const routes = res.body.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`);
    expect(routes).toEqual(
      expect.arrayContaining(['POST /v1/signup', 'GET /v1/me', 'POST /v1/emails', 'GET /v1/limits']),
    );
  });

  it('answers 404 {error} for an unknown route', async () => {
    expectError(await server.call('GET', '/v1/nothing-here'), 404, /GET \/v1\/nothing-here/);
  });

  it("answers 404 {error} at SES's feedback endpoint while no route sends through SES", async () => {
    expectError(
      await server.call('POST', '/feedback/ses', {
        body: '{"Type": "Notification"}',
        headers: { 'content-type': 'text/plain; charset=UTF-8' },
      }),
      404,
      /No route of POSTHORN_ROUTES sends through Amazon SES/,
    );
  });

  it('answers 400 {error} for malformed JSON, an empty JSON body and a non-object body', async () => {
    expectError(await server.call('POST', '/v1/signup', { body: '{"email": "a@example.com",' }), 400, /JSON/);
    expectError(
      await server.call('POST', '/v1/signup', { body: '', headers: { 'content-type': 'application/json' } }),
      400,
    );
    expectError(await server.call('POST', '/v1/signup', { body: '[1,2]' }), 400, /JSON object/);
  });

  it('answers 415 {error} for a body that is not JSON', async () => {
    expectError(
      await server.call('POST', '/v1/signup', { body: 'email=a', headers: { 'content-type': 'text/plain' } }),
      415,
    );
  });

  it('answers 413 {error} for a body over 1 MiB on a small endpoint and creates nothing', async () => {
    const body = JSON.stringify({
      email: 'big@example.com',
      name: 'x'.repeat(1024 * 1024 + 10),
      accept_terms: true,
    });
    expectError(await server.call('POST', '/v1/signup', { body }), 413, /too large/);
    const row = await server.runtime.ctx.db
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', 'big@example.com')
      .executeTakeFirst();
    expect(row).toBeUndefined();
  });

  it('ignores unknown fields with 200 and stores nothing of them', async () => {
    const { project_key } = await server.signup();
    const res = await server.call('PATCH', '/v1/me/footer', {
      key: project_key.key,
      body: { address: '1 Main Street, Springfield, USA', colour: 'blue' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ address: '1 Main Street, Springfield, USA', is_your_own_address: true });
  });

  it('checks pagination bounds', async () => {
    const { project_key } = await server.signup();
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=ten']) {
      expectError(await server.call('GET', `/v1/emails?${q}`, { key: project_key.key }), 400, /limit|offset/);
    }
    const ok = await server.call('GET', '/v1/emails?limit=100&offset=0', { key: project_key.key });
    expect(ok.body).toMatchObject({ data: [], total: 0, limit: 100, offset: 0 });
  });
});

describe('GET /v1/me and GET /v1/limits', () => {
  it('has exactly the spec fields (plus `inbound`, issue 5, and `smtp`), and the footer starts as the placeholder', async () => {
    const { project, project_key } = await server.signup();
    const me = await server.call('GET', '/v1/me', { key: project_key.key });
    expect(me.status).toBe(200);
    expect(Object.keys(me.body).sort()).toEqual(['footer', 'inbound', 'project', 'sending', 'smtp']);
    expect(Object.keys(me.body.inbound).sort()).toEqual(['address', 'domain']);
    // where to submit mail: the configured ports (this server runs no SMTP role: its settings); its
    // SMTP name is a .localhost one, so the address it listens on, and its self-signed certificate
    const { config } = server.runtime.ctx;
    expect(me.body.smtp).toEqual({
      host: config.host,
      port: config.smtpPort,
      tls_port: config.smtpTlsPort,
      certificate: { self_signed: true, path: `${config.dataDir}/tls/self-signed.crt` },
    });
    expect(me.body.project).toEqual({ id: project.id, name: project.name, object: 'project' });
    expect(Object.keys(me.body.sending).sort()).toEqual([
      'default_from',
      'email_confirmed',
      'note',
      'ready',
      'verified_domains',
    ]);
    expect(me.body.sending).toMatchObject({ ready: false, email_confirmed: false, verified_domains: [] });
    expect(me.body.sending.note).toMatch(/`from` must be an address on a verified domain/);
    expect(me.body.footer.is_your_own_address).toBe(false);

    const footer = await server.call('PATCH', '/v1/me/footer', {
      key: project_key.key,
      body: { address: 'Posthorn Ltd, 2 High St, Leeds' },
    });
    expect(footer.status).toBe(200);
    const after = await server.call('GET', '/v1/me', { key: project_key.key });
    expect(after.body.footer).toEqual({
      address: 'Posthorn Ltd, 2 High St, Leeds',
      is_your_own_address: true,
    });
  });

  it('refuses a bad footer address with 400 {error}', async () => {
    const { project_key } = await server.signup();
    expectError(
      await server.call('PATCH', '/v1/me/footer', { key: project_key.key, body: {} }),
      400,
      /address/,
    );
    expectError(
      await server.call('PATCH', '/v1/me/footer', { key: project_key.key, body: { address: 42 } }),
      400,
      /address/,
    );
    expectError(
      await server.call('PATCH', '/v1/me/footer', { key: project_key.key, body: { address: 'short' } }),
      400,
      /address/,
    );
  });

  it('reports plan, contacts, sending and features, and follows a plan change', async () => {
    const { project, workspace, project_key } = await server.signup();
    const limits = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(limits.status).toBe(200);
    expect(limits.body).toMatchObject({
      plan: 'free',
      plan_name: 'Free',
      contacts: { count: 0, limit: 1000 },
      sending: { this_month: 0, included_per_month: 3000, remaining: 3000, over_limit: false },
    });
    expect(limits.body.features).toMatchObject({ automations: false, custom_domains: true });

    await addUsageToday(server, project.id, { sent: 5, shard: 3 });
    const used = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(used.body.sending).toMatchObject({ this_month: 5, remaining: 2995 });

    await setWorkspacePlan(server.runtime.ctx, workspace.id, 'pro');
    const pro = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(pro.body).toMatchObject({ plan: 'pro', features: { automations: true, ab_testing: true } });
    await expect(setWorkspacePlan(server.runtime.ctx, workspace.id, 'gold')).rejects.toThrow(/unknown plan/);
  });
});

describe('OpenAPI', () => {
  it('serves an OpenAPI 3.1 document that passes an independent validator', async () => {
    const res = await server.call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    for (const path of [
      '/v1/signup',
      '/v1/me',
      '/v1/limits',
      '/v1/emails',
      '/v1/projects/{project_id}/api-keys',
    ]) {
      expect(res.body.paths[path]).toBeDefined();
    }
    await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toBeTruthy();
  });

  it('renders the docs page', async () => {
    const res = await fetch(`${server.url}/v1/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
  });
});

describe('rate limiting', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ POSTHORN_RATE_LIMIT: '3' });
  });
  afterAll(() => limited?.close());

  it('answers 429 {error} with RateLimit and Retry-After headers past the limit, per project', async () => {
    const a = await limited.signup();
    const b = await limited.signup();
    const results = await Promise.all(
      Array.from({ length: 12 }, () => limited.call('GET', '/v1/me', { key: a.project_key.key })),
    );
    const refused = results.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expectError(r, 429, /requests per second/);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('ratelimit-remaining')).toBe('0');
    }
    const ok = results.find((r) => r.status === 200);
    expect(ok?.headers.get('ratelimit-limit')).toBe('3');
    // another project has its own budget
    const other = await limited.call('GET', '/v1/me', { key: b.project_key.key });
    expect(other.status).toBe(200);
  });

  it('sends no RateLimit headers when the limit is off', async () => {
    const { project_key } = await server.signup();
    const res = await server.call('GET', '/v1/me', { key: project_key.key });
    expect(res.headers.get('ratelimit-limit')).toBeNull();
  });
});

describe('NUL characters', () => {
  it('are refused with 400 naming the field, in bodies, query strings and paths', async () => {
    const { project_key } = await server.signupConfirmed();
    const key = project_key.key;
    const body = {
      from: 'onboarding@posthorn.localhost',
      to: 'a@example.org',
      subject: 'a\u0000b',
      text: 'x',
    };
    const before = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expectError(await server.call('POST', '/v1/emails', { key, body }), 400, /`subject` contains a NUL/);
    expectError(
      await server.call('POST', '/v1/emails', {
        key,
        body: { ...body, subject: 'ok', headers: { 'X-A': '\u0000' } },
      }),
      400,
      /`headers.X-A`/,
    );
    const after = await server.runtime.ctx.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expectError(await server.call('GET', '/v1/emails?to=a%00b', { key }), 400, /Query parameter `to`/);
    expectError(
      await server.call('DELETE', '/v1/suppressions/a%00b@example.org', { key }),
      400,
      /Path parameter `email`/,
    );
  });
});
