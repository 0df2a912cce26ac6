import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { signInByCode } from '../helpers/sessions.ts';

/** The audience and settings screens: contacts, lists, segments, settings, members and account. */

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let owner: SignupResult;
const PASSWORD = 'first password 123';
const NEW_PASSWORD = 'second password 456';

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  owner = await server.signupConfirmed({ name: 'Olga Owner' });
  page = await browser.context.newPage();
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(10_000);
  await signInWithCode(page, server, owner.account.email);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const heading = (p: Page, name: string) => p.getByRole('heading', { level: 1, name }).waitFor();

/** The first link of `kind` (`reset` or `invite`) emailed to an address after message number `since`. */
async function linkToken(email: string, kind: string, since: number): Promise<string> {
  const mail = await server.sink.waitFor(
    (m) =>
      m.to.includes(email) &&
      server.sink.messages.indexOf(m) >= since &&
      (m.parsed.text ?? '').includes(`/${kind}?token=`),
  );
  const token = new RegExp(`/${kind}\\?token=([0-9A-Za-z_-]+)`).exec(mail.parsed.text ?? '')?.[1];
  expect(token, mail.parsed.text).toBeDefined();
  return token as string;
}

/** A dashboard session opened through the API (another device of the same person). */
const apiSession = async (email: string) => (await signInByCode(server, email, 60_000)).token;

describe('the audience screens', () => {
  it('creates a contact, and shows its fields, consent history and events', async () => {
    await page.goto(`${server.url}/contacts`);
    await checkScreen(page, 'contacts (none yet)', (p) => p.getByText('No contacts match').waitFor());
    await page.getByRole('button', { name: 'New contact' }).click();
    const dialog = page.getByRole('dialog', { name: 'New contact' });
    await dialog.getByLabel('Email', { exact: true }).fill('ada@example.com');
    await dialog.getByLabel('First name', { exact: true }).fill('Ada');
    await dialog.getByLabel('Last name', { exact: true }).fill('Lovelace');
    await checkScreen(page, 'new contact dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Create contact' }).click();
    await heading(page, 'ada@example.com');

    const tracked = await server.call('POST', '/v1/events', {
      key: owner.project_key.key,
      body: {
        email: 'ada@example.com',
        event: 'purchase',
        value: 42,
        currency: 'EUR',
        properties: { sku: 'A-1' },
      },
    });
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    await page.reload();
    const consent = page.getByRole('region', { name: 'Consent history' });
    await consent.getByText('source: dashboard').waitFor();
    await page
      .getByRole('region', { name: 'Recent events' })
      .getByText('purchase', { exact: true })
      .waitFor();
    await checkScreen(page, 'contact page', (p) =>
      p.getByRole('region', { name: 'Details' }).getByText('Lovelace').waitFor(),
    );
  });

  it('creates a list and adds contacts to it by address', async () => {
    await page.goto(`${server.url}/lists`);
    await page.getByRole('button', { name: 'New list' }).click();
    const dialog = page.getByRole('dialog', { name: 'New list' });
    await dialog.getByLabel('Name', { exact: true }).fill('Newsletter');
    await dialog.getByRole('button', { name: 'Create list' }).click();
    const row = page.getByRole('row', { name: /Newsletter/ });
    await row.getByRole('link', { name: '0 members of Newsletter' }).waitFor();
    await checkScreen(page, 'lists', () => row.waitFor());

    await row.getByRole('button', { name: 'Add contacts to Newsletter' }).click();
    const add = page.getByRole('dialog', { name: 'Add contacts to Newsletter' });
    await add
      .getByLabel('Email addresses', { exact: true })
      .fill('ada@example.com\nbob@example.com, ada@example.com');
    await add.getByRole('button', { name: 'Add contacts' }).click();
    await add.getByText('2 added, 1 new contact created.').waitFor();
    await checkScreen(page, 'add contacts dialog', () => add.waitFor());
    await add.getByRole('button', { name: 'Done' }).click();
    await row.getByRole('link', { name: '2 members of Newsletter' }).waitFor();

    // the members count leads to the contacts on the list; the search finds one address
    await row.getByRole('link', { name: '2 members of Newsletter' }).click();
    await heading(page, 'Contacts');
    await page.getByText('2 contacts · page 1 of 1').waitFor();
    // the start of an address, in any case
    await page.getByLabel('Email', { exact: true }).fill('BOB@');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('1 contact · page 1 of 1').waitFor();
    await page.getByRole('link', { name: 'bob@example.com' }).waitFor();
    await checkScreen(page, 'contacts search', (p) => p.getByRole('table').waitFor());
  });

  it('builds a segment from a list and an event condition, with its count', async () => {
    const preview = await server.call('POST', '/v1/segments/preview', {
      key: owner.project_key.key,
      body: { definition: { all: [{ field: 'email', op: 'exists' }] } },
    });
    const liveCount = preview.status === 200;
    await page.goto(`${server.url}/segments`);
    await checkScreen(page, 'segments (none yet)', (p) => p.getByText('No segments yet').waitFor());
    await page.getByRole('link', { name: 'New segment' }).click();
    await heading(page, 'New segment');
    await page.getByLabel('Name', { exact: true }).fill('Newsletter buyers');
    const status = page.getByRole('region', { name: 'Matching contacts' }).getByRole('status');

    const first = page.getByRole('group', { name: 'Condition 1' });
    await first.getByLabel('Type', { exact: true }).selectOption('list');
    await first.getByLabel('List', { exact: true }).selectOption({ label: 'Newsletter' });
    if (liveCount)
      await eventually(async () => expect(await status.textContent()).toBe('2 contacts match'), {
        timeoutMs: 15_000,
      });
    else await status.getByText('save the segment to count it').waitFor();

    await page.getByRole('button', { name: 'Add condition' }).click();
    const second = page.getByRole('group', { name: 'Condition 2' });
    await second.getByLabel('Type', { exact: true }).selectOption('event');
    await status.getByText('Complete the conditions').waitFor();
    await second.getByLabel('Event name', { exact: true }).fill('purchase');
    await second.getByLabel('In the last (days)', { exact: true }).fill('30');
    if (liveCount) {
      await eventually(async () => expect(await status.textContent()).toBe('1 contact match'), {
        timeoutMs: 15_000,
      });
      // any of the two: both list members
      await page.getByLabel('Contacts match', { exact: true }).selectOption('any');
      await eventually(async () => expect(await status.textContent()).toBe('2 contacts match'), {
        timeoutMs: 15_000,
      });
      await page.getByLabel('Contacts match', { exact: true }).selectOption('all');
      await eventually(async () => expect(await status.textContent()).toBe('1 contact match'), {
        timeoutMs: 15_000,
      });
    }
    // a nested group numbers its conditions after it, and goes with one button
    await page.getByRole('button', { name: 'Add group', exact: true }).click();
    const group = page.getByRole('group', { name: 'Group 3' });
    await group
      .getByRole('group', { name: 'Condition 3.1' })
      .getByLabel('Value', { exact: true })
      .fill('bob');
    if (liveCount)
      await eventually(async () => expect(await status.textContent()).toBe('0 contacts match'), {
        timeoutMs: 15_000,
      });
    await checkScreen(page, 'segment editor', () => group.waitFor());
    await group.getByRole('button', { name: 'Remove group 3' }).click();
    await group.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Save segment' }).click();

    await heading(page, 'Segments');
    const row = page.getByRole('row', { name: /Newsletter buyers/ });
    await row.getByRole('link', { name: '1 contact' }).waitFor();
    await checkScreen(page, 'segments', () => row.waitFor());
    const saved = await server.call('GET', '/v1/segments', { key: owner.project_key.key });
    expect(saved.body.data[0].definition).toEqual({
      all: [
        { list: expect.any(String), op: 'member' },
        { event: 'purchase', count: { gte: 1 }, within_days: 30 },
      ],
    });

    // the saved segment opens in the builder as it was saved, with its count
    await row.getByRole('link', { name: 'Newsletter buyers' }).click();
    await heading(page, 'Newsletter buyers');
    await page.getByText('As saved: 1 contact.').waitFor();
    expect(await page.getByRole('group', { name: 'Condition 2' }).getByLabel('Event name').inputValue()).toBe(
      'purchase',
    );
    // the count leads to the segment's contacts
    await page.goto(`${server.url}/segments`);
    await page
      .getByRole('row', { name: /Newsletter buyers/ })
      .getByRole('link', { name: '1 contact' })
      .click();
    await page.getByRole('link', { name: 'ada@example.com' }).waitFor();
    await page.getByText('1 contact · page 1 of 1').waitFor();
  });
});

describe('the settings screens', () => {
  it('sets the footer address and the sending rate, and lists workspaces and projects', async () => {
    await page.goto(`${server.url}/settings`);
    await page.getByRole('heading', { level: 2, name: 'Plan and usage' }).waitFor();
    await page.getByLabel('Postal address', { exact: true }).fill('1 Main Street, 12345 Springfield');
    await page.getByRole('button', { name: 'Save address' }).click();
    await page.getByText('Footer address saved.').waitFor();
    await page.getByLabel('Messages per second', { exact: true }).fill('5');
    await page.getByRole('button', { name: 'Save rate' }).click();
    await page.getByText('Sending rate saved.').waitFor();
    const me = await server.call('GET', '/v1/me', { key: owner.project_key.key });
    expect(me.body.footer).toEqual({
      address: '1 Main Street, 12345 Springfield',
      is_your_own_address: true,
    });
    const rate = await server.call('GET', '/v1/me/sending-rate', { key: owner.project_key.key });
    expect(rate.body).toMatchObject({ per_second: 5, per_hour: null });

    const workspaces = page.getByRole('region', { name: 'Workspaces and projects' });
    await workspaces.getByText(owner.project.name).first().waitFor();
    await workspaces.getByLabel('New project name', { exact: true }).fill('Second project');
    await workspaces.getByRole('button', { name: 'Create project' }).click();
    await workspaces.getByText('Second project').first().waitFor();
    // the new project is one to switch to
    await eventually(
      async () =>
        expect(
          await page
            .getByLabel('Project', { exact: true })
            .getByRole('option', { name: /Second project/ })
            .count(),
        ).toBe(1),
      { timeoutMs: 1_000 },
    );
    await checkScreen(page, 'settings', () => workspaces.waitFor());
  });

  it('invites a member who accepts in another browser and sees only what a Member may', async () => {
    await page.goto(`${server.url}/members`);
    await checkScreen(page, 'members', (p) => p.getByRole('row', { name: /Olga Owner/ }).waitFor());
    const email = `mia-${Date.now().toString(36)}@example.com`;
    const since = server.sink.messages.length;
    await page.getByRole('button', { name: 'Invite member' }).click();
    const dialog = page.getByRole('dialog', { name: 'Invite a member' });
    await dialog.getByLabel('Email', { exact: true }).fill(email);
    await dialog.getByLabel('Role', { exact: true }).selectOption('member');
    await checkScreen(page, 'invite dialog', () => dialog.waitFor());
    await dialog.getByRole('button', { name: 'Send invitation' }).click();
    await dialog.getByText('We emailed an invitation').waitFor();
    await dialog.getByRole('button', { name: 'Done' }).click();
    const token = await linkToken(email, 'invite', since);
    // the invitation waits under Pending invitations until it is accepted
    const pending = page.getByRole('region', { name: 'Pending invitations' });
    await pending.getByRole('row', { name: new RegExp(email) }).waitFor();
    await checkScreen(page, 'members with a pending invitation', () => pending.waitFor());

    const other = await launchBrowser();
    try {
      const mia = await other.context.newPage();
      mia.setDefaultTimeout(10_000);
      await mia.goto(`${server.url}/invite?token=${token}`);
      await mia.getByLabel('Your name', { exact: true }).fill('Mia Member');
      await mia.getByRole('checkbox', { name: 'I accept the terms of service' }).check();
      await mia.getByRole('button', { name: 'Create account and join' }).click();
      await heading(mia, 'Overview');

      await mia.goto(`${server.url}/members`);
      await checkScreen(mia, 'members as a Member', (p) => p.getByText('You are a Member').waitFor());
      // a Member sees who is on the project, but changes nothing and sees no invitations
      await mia.getByRole('row', { name: /Olga Owner/ }).waitFor();
      expect(await mia.getByRole('button', { name: 'Invite member' }).count()).toBe(0);
      expect(await mia.getByRole('region', { name: 'Pending invitations' }).count()).toBe(0);
      expect(await mia.getByRole('button', { name: /^Remove/ }).count()).toBe(0);
      await mia.getByRole('button', { name: 'Leave project' }).waitFor();
      expect(await mia.getByRole('combobox', { name: /^Role of/ }).count()).toBe(0);
      await mia.goto(`${server.url}/keys`);
      await mia.getByText('As a Member').waitFor();
      expect(await mia.getByRole('button', { name: 'Create key' }).count()).toBe(0);
      await mia.goto(`${server.url}/settings`);
      await checkScreen(mia, 'settings as a Member', (p) =>
        p.getByText('1 Main Street, 12345 Springfield').waitFor(),
      );
      expect(await mia.getByRole('button', { name: 'Save address' }).count()).toBe(0);
      expect(await mia.getByRole('button', { name: 'Save rate' }).count()).toBe(0);
      // Members read and send: the audience screens are theirs too
      await mia.goto(`${server.url}/contacts`);
      await mia.getByRole('link', { name: 'ada@example.com' }).waitFor();
    } finally {
      await other.close();
    }

    // the Owner sees the new member, makes them an Admin, then removes them
    await page.reload();
    const row = page.getByRole('row', { name: new RegExp(email) });
    await row.waitFor();
    await page.waitForLoadState('networkidle'); // the invitations have been read: none is pending now
    expect(await page.getByRole('region', { name: 'Pending invitations' }).count()).toBe(0);
    await row.getByRole('combobox', { name: `Role of ${email}` }).selectOption('admin');
    const members = async () =>
      (await server.call('GET', `/v1/projects/${owner.project.id}/members`, { key: owner.account_key.key }))
        .body.data;
    await eventually(
      async () =>
        expect((await members()).find((m: { email: string }) => m.email === email)?.role).toBe('admin'),
      { timeoutMs: 1_000 },
    );
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    const confirm = page.getByRole('dialog', { name: `Remove ${email}?` });
    await confirm.getByRole('button', { name: 'Remove member' }).click();
    // an open dialog hides the page from the accessibility tree: look for the row once it has closed
    await confirm.waitFor({ state: 'detached' });
    await row.waitFor({ state: 'detached' });
    expect((await members()).map((m: { email: string }) => m.email)).not.toContain(email);
  });

  it('sets a password, and lists and revokes sessions', async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole('heading', { level: 2, name: 'Set a password' }).waitFor();
    await page.getByLabel('New password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Repeat the new password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByText('Password saved.').waitFor();
    await page.getByRole('heading', { level: 2, name: 'Change your password' }).waitFor();

    // another device signs in; this page lists it, and revokes it
    const otherDevice = await apiSession(owner.account.email);
    await page.reload();
    const sessions = page.getByRole('region', { name: 'Signed-in sessions' });
    await sessions.getByText('this browser').waitFor();
    await eventually(
      async () => expect(await sessions.getByRole('button', { name: /^Revoke/ }).count()).toBe(1),
      { timeoutMs: 15_000 },
    );
    await checkScreen(page, 'account', () => sessions.waitFor());
    await sessions.getByRole('button', { name: /^Revoke/ }).click();
    await eventually(
      async () => expect(await sessions.getByRole('button', { name: /^Revoke/ }).count()).toBe(0),
      { timeoutMs: 15_000 },
    );
    const revoked = await server.call('GET', '/api/session', { key: otherDevice });
    expect(revoked.status).toBe(401);
  });

  it('resets a forgotten password through the pages and signs in with the new one', async () => {
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await heading(page, 'Sign in to Posthorn');
    await page.getByRole('tab', { name: 'Password' }).click();
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await heading(page, 'Reset your password');
    await page.getByLabel('Email', { exact: true }).fill(owner.account.email);
    const since = server.sink.messages.length;
    await page.getByRole('button', { name: 'Email me a link' }).click();
    await page.getByText('we emailed a link').waitFor();
    const token = await linkToken(owner.account.email, 'reset', since);

    await page.goto(`${server.url}/reset?token=${token}`);
    await heading(page, 'Set a new password');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await heading(page, 'Password changed');
    await page.getByRole('link', { name: 'Sign in' }).click();

    await heading(page, 'Sign in to Posthorn');
    await page.getByRole('tab', { name: 'Password' }).click();
    const form = page.getByRole('tabpanel', { name: 'Password' });
    await form.getByLabel('Email', { exact: true }).fill(owner.account.email);
    await form.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Overview');
    // the old password is gone, and the link worked once
    const old = await server.call('POST', '/api/auth/login/password', {
      body: { email: owner.account.email, password: PASSWORD },
    });
    expect(old.status).toBe(401);
    const again = await server.call('POST', '/api/auth/reset', {
      body: { token, password: 'third password 789' },
    });
    expect(again.status).toBe(400);
  });
});
