import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkContentQuality } from '../../src/domain/templates/content-checks.ts';
import { expectError } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Checks before send that a marketer understands (issue 49, build item 3): images without alt
 * text, heavy images, HTML past Gmail's 102 KB clipping, links that answer an error (fetched from
 * the server through the webhooks' address guard), and SpamAssassin's offline score where it is
 * installed; on a template and on a campaign. Advice, never a refusal.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let site: ReturnType<typeof createServer>;
let base: string;
let hits = 0;

const hasSpamAssassin = (() => {
  try {
    execFileSync('spamassassin', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  // a web site the links and images point to: one page works, one is gone, one image is heavy
  site = createServer((req, res) => {
    hits++;
    if (req.url === '/gone') res.writeHead(404).end();
    else if (req.url === '/heavy.png')
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(3 * 1024 * 1024) }).end();
    else if (req.url === '/small.png')
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '2048' }).end();
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<p>ok</p>');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  // the links' server is on this machine: allowed as a webhook to a private address would be
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  account = await server.signupConfirmed();
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
  site?.close();
});

const byId = (checks: { id: string; status: string; message: string }[]) =>
  Object.fromEntries(checks.map((c) => [c.id, c]));

describe('content checks', () => {
  it("warn of a template's missing alt text, heavy image and broken link, in people's words", async () => {
    const mjml = `<mjml><mj-body><mj-section><mj-column>
      <mj-image src="${base}/heavy.png"></mj-image>
      <mj-image src="${base}/small.png" alt="Our shop"></mj-image>
      <mj-text>Hello <a href="${base}/ok">see the sale</a> and <a href="${base}/gone">the old page</a></mj-text>
      </mj-column></mj-section></mj-body></mjml>`;
    const made = await server.call('POST', '/v1/templates', {
      key,
      body: { name: 'Sale', subject: 'Sale', mjml },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const res = await server.call('GET', `/v1/templates/${made.body.id}/checks`, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const checks = byId(res.body.checks);
    expect(checks.alt_text).toMatchObject({
      status: 'warning',
      message: expect.stringMatching(/1 of 2 images have no alt text/),
    });
    expect(checks.alt_text.message).toContain('/heavy.png');
    expect(checks.image_size).toMatchObject({
      status: 'warning',
      message: expect.stringContaining('heavy.png (3072 KB)'),
    });
    expect(checks.links).toMatchObject({
      status: 'warning',
      message: expect.stringMatching(/1 of 2 links do not work.*\/gone answered 404/),
    });
    expect(checks.html_size.status).toBe('ok');
    expect(checks.spam_score.status).toMatch(hasSpamAssassin ? /^(ok|warning)$/ : /^skipped$/);
    if (hasSpamAssassin) expect(checks.spam_score.message).toMatch(/SpamAssassin scores it -?\d/);
  });

  it("warn of a campaign's HTML past Gmail's clipping, and pass a clean one", async () => {
    const long = `<p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(2000)}</p>`;
    const campaign = async (html: string) => {
      const made = await server.call('POST', '/v1/campaigns', {
        key,
        body: { name: `News ${html.length}`, from: FROM, subject: 'News', html },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      return byId(
        (await server.call('GET', `/v1/campaigns/${made.body.id}/content-checks`, { key })).body.checks,
      );
    };
    const clipped = await campaign(`<html><body>${long}</body></html>`);
    expect(clipped.html_size).toMatchObject({
      status: 'warning',
      message: expect.stringMatching(/Gmail cuts a message off after 102 KB/),
    });
    const clean = await campaign(
      `<html><body><p>Hi</p><a href="${base}/ok">Read</a><img src="${base}/small.png" alt="Logo"></body></html>`,
    );
    for (const id of ['alt_text', 'image_size', 'html_size', 'links'])
      expect(clean[id].status, clean[id].message).toBe('ok');
  });

  it("are another project's 404, and never fetch a private address without the operator's leave", async () => {
    const other = await server.signupConfirmed();
    const made = await server.call('POST', '/v1/templates', {
      key,
      body: {
        name: 'Mine',
        subject: 'Mine',
        mjml: '<mjml><mj-body><mj-section><mj-column><mj-text>x</mj-text></mj-column></mj-section></mj-body></mjml>',
      },
    });
    expectError(
      await server.call('GET', `/v1/templates/${made.body.id}/checks`, { key: other.project_key.key }),
      404,
    );
    expectError(
      await server.call('GET', '/v1/campaigns/00000000-0000-4000-8000-000000000000/content-checks', { key }),
      404,
    );
    // the production rule: a link to this machine is reported, never fetched
    const before = hits;
    const production = {
      ...server.runtime.ctx,
      config: { ...server.runtime.ctx.config, webhookAllowPrivate: false },
    };
    const checks = byId(
      await checkContentQuality(production, {
        from: FROM,
        subject: 'x',
        html: `<a href="${base}/ok">here</a><img src="${base}/small.png" alt="x">`,
      }),
    );
    expect(checks.links).toMatchObject({
      status: 'warning',
      message: expect.stringMatching(/a loopback address: links are checked on public addresses only/),
    });
    expect(hits).toBe(before);
  });
});
