import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The reputation guard in the dashboard (issue 33): a domain's warm-up started and shown on its
 * page, and a stop of a domain's marketing shown on the Overview with a form that resumes it.
 */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let owner: SignupResult;
let domainId: string;

beforeAll(async () => {
  browser = await launchBrowser();
  server = await startTestServer();
  owner = await server.signupConfirmed({ name: 'Rita Reputation' });
  domainId = (await insertVerifiedDomain(server, owner.project.id, 'rep.example')).id;
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the reputation guard in the dashboard', () => {
  it("starts a domain's warm-up on its page and shows the day, today's volume and the days ahead", async () => {
    await page.goto(`${server.url}/domains/${domainId}`);
    const card = page.getByRole('region', { name: 'Warm-up' });
    await card.getByText('No warm-up.').waitFor();
    await card.getByRole('button', { name: 'Start a warm-up' }).click();
    await card.getByText(/Day 1 of 30 \(the default schedule\)/).waitFor();
    expect(await card.textContent()).toMatch(/Today: 0 of 50 messages/);
    expect(await card.textContent()).toMatch(/Next days: 100, 150, 250, 400, 600/);
    await checkScreen(page, 'domain warm-up', () => card.waitFor());
    const api = await server.call('GET', `/v1/domains/${domainId}`, { key: owner.project_key.key });
    expect(api.body.warmup).toMatchObject({ day: 1, days: 30, default_schedule: true });
  });

  it("shows a domain's stop on the Overview, and resumes it with the admin's reason", async () => {
    // what the breaker records when a domain's complaints cross the stop threshold
    await server.runtime.ctx.db
      .insertInto('breaker_trips')
      .values({
        project_id: owner.project.id,
        scope: 'domain',
        key: domainId,
        level: 'stop',
        metric: 'complaint_rate',
        rate: 0.8,
        threshold: 0.3,
        messages: 400,
        reason: 'complaints reached 0.80 % of 400 messages (the stop threshold is 0.3 %)',
      })
      .execute();
    await page.goto(`${server.url}/`);
    const banner = page.getByRole('region', { name: 'Marketing paused by the circuit breaker' });
    await banner.getByText(/Marketing from a sending domain: complaints reached 0\.80 %/).waitFor();
    await checkScreen(page, 'overview with a breaker stop', () => banner.waitFor());
    await banner.getByLabel('Reason', { exact: true }).fill('Removed the list we bought');
    await banner.getByRole('button', { name: 'Resume marketing' }).click();
    await eventually(async () => expect(await banner.count()).toBe(0), { timeoutMs: 10_000 });
    const trip = await server.runtime.ctx.db
      .selectFrom('breaker_trips')
      .selectAll()
      .where('key', '=', domainId)
      .executeTakeFirstOrThrow();
    expect(trip).toMatchObject({
      resume_reason: 'Removed the list we bought',
      resumed_by: expect.stringMatching(/^account /),
    });
  });
});
