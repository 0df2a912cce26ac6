import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openToken, unsubscribeToken } from '../../src/domain/marketing/tokens.ts';
import { FROM } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The public door of marketing mail (`/u/...` preference pages, `/t/...` tracking) answers with a
 * strict Content-Security-Policy that no other site may frame (`frame-ancestors 'none'`, and
 * X-Frame-Options DENY for older browsers), and the pages still render with it: their one inline
 * style is allowed by its hash.
 */

let server: TestServer;
let token: string;
let emailId: string;

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signupConfirmed();
  const key = account.project_key.key;
  const contact = await server.call('POST', '/v1/contacts', { key, body: { email: 'reader@example.org' } });
  expect(contact.status).toBe(200);
  const sent = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to: 'reader@example.org', subject: 'News', html: '<p>News</p>' },
  });
  expect(sent.status).toBe(200);
  emailId = sent.body.id;
  // what a campaign does: the email names its contact, which is what the unsubscribe token is about
  await server.runtime.ctx.db
    .updateTable('emails')
    .set({ contact_id: contact.body.id })
    .where('id', '=', emailId)
    .execute();
  token = unsubscribeToken(server.runtime.ctx, { emailId, contactId: contact.body.id });
});
afterAll(() => server?.close());

const request = (method: string, path: string, body?: string) =>
  fetch(`${server.url}${path}`, {
    method,
    redirect: 'manual',
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }),
  });

function directives(csp: string | null): Map<string, string> {
  expect(csp, 'a Content-Security-Policy header').toBeTruthy();
  return new Map(
    (csp as string).split(';').map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name, values.join(' ')];
    }),
  );
}

function expectLockedDown(res: Response) {
  const policy = directives(res.headers.get('content-security-policy'));
  expect(policy.get('frame-ancestors')).toBe("'none'");
  expect(policy.get('default-src')).toBe("'none'");
  expect(policy.get('form-action')).toBe("'self'");
  expect(policy.has('script-src')).toBe(false); // default-src 'none': no script runs
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  return policy;
}

describe('the preference pages', () => {
  it('GET /u/{token} is a working page under a strict policy: its inline style is allowed by hash', async () => {
    const res = await request('GET', `/u/${token}`);
    expect(res.status).toBe(200);
    const policy = expectLockedDown(res);
    const html = await res.text();
    expect(html).toContain('Unsubscribe from all marketing emails');
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1];
    expect(style, 'the page has its inline style').toBeTruthy();
    const hash = createHash('sha256')
      .update(style as string)
      .digest('base64');
    expect(policy.get('style-src')).toBe(`'sha256-${hash}'`);
    // and nothing else inline that the policy would block
    expect(html).not.toMatch(/<script|\sstyle=|\son[a-z]+=/i);
  });

  it('the form posts to this origin and its answer carries the same policy', async () => {
    const res = await request('POST', `/u/${token}`, 'scope=all');
    expect(res.status).toBe(200);
    expectLockedDown(res);
    expect(await res.text()).toContain('will no longer receive marketing emails');
    const again = await request('POST', `/u/${token}`, 'scope=resubscribe');
    expect(again.status).toBe(200);
    expectLockedDown(again);
  });

  it('the test page and the page of an unknown link carry it too', async () => {
    for (const [method, path] of [
      ['GET', '/u/test'],
      ['POST', '/u/test'],
      ['GET', '/u/not-a-token'],
    ]) {
      const res = await request(method, path, method === 'POST' ? '' : undefined);
      expectLockedDown(res);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });
});

describe('the tracking links', () => {
  it('the open pixel, a refused token and a malformed form post answer with the policy', async () => {
    const pixel = await request('GET', `/t/o/${openToken(server.runtime.ctx, emailId)}`);
    expect(pixel.status).toBe(200);
    expectLockedDown(pixel);
    const refused = await request('GET', '/t/c/not-a-token');
    expect(refused.status).toBe(404);
    expectLockedDown(refused);
    const bad = await request('POST', `/u/${token}`, 'scope=everything');
    expect(bad.status).toBe(400);
    expectLockedDown(bad);
  });
});
