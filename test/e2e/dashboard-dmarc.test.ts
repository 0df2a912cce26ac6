import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

/**
 * A real DMARC report through the MX, seen in the API and on the domain's DMARC screen (issue 34):
 * Google's zipped aggregate report delivered by an SMTP client to the address the domain's DMARC
 * record names, then the dashboard's screen for the domain shows the reporter, the messages and
 * the source; a report that cannot be read shows its reason.
 */

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'dmarc');

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let owner: SignupResult;
let domainId: string;

beforeAll(async () => {
  browser = await launchBrowser();
  server = await startTestServer({ POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0' }, [
    'api',
    'worker',
    'smtp',
  ]);
  owner = await server.signupConfirmed({ name: 'Dana Dmarc' });
  domainId = (await insertVerifiedDomain(server, owner.project.id, 'borschow.com')).id;
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("a domain's DMARC screen", () => {
  it('shows a report delivered through the MX: reporter, messages and source', async () => {
    const key = owner.project_key.key;
    const domain = (await server.call('GET', `/v1/domains/${domainId}`, { key })).body;
    const rua = domain.records
      .find((r: { name: string }) => r.name === '_dmarc.borschow.com')
      .value.split('mailto:')[1];
    const sent = await deliverToMx(
      server,
      { from: 'noreply-dmarc-support@google.com', to: [rua] },
      readFileSync(path.join(FIXTURES, 'google.com.eml')),
    );
    expect(sent.ok, sent.response).toBe(true);
    const api = await server.call('GET', `/v1/domains/${domainId}/dmarc`, { key });
    expect(api.body.reports).toMatchObject([{ kind: 'aggregate', reporter: 'google.com', messages: 1 }]);

    await page.goto(`${server.url}/domains/${domainId}`);
    await page.getByRole('link', { name: 'DMARC and TLS reports' }).click();
    await page.getByRole('heading', { level: 1, name: 'DMARC reports: borschow.com' }).waitFor();
    const received = page.getByRole('table', { name: 'The latest reports received' });
    await received.getByRole('row', { name: /google\.com/ }).waitFor();
    expect(await page.getByText('Messages reported').locator('..').textContent()).toContain('1');
    const sources = page.getByRole('table', { name: 'The addresses that sent mail as the domain' });
    expect(await sources.getByRole('row').count()).toBe(1 + api.body.sources.length);
    await checkScreen(page, 'domain DMARC reports', () => received.waitFor());
  });
});
