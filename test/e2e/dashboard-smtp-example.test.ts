import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen } from '../helpers/dashboard.ts';
import { eventually } from '../helpers/eventually.ts';
import {
  type SignupResult,
  signupConfirmedInDatabase,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

/**
 * The SMTP screen's examples work as shown (issue 48, build item 3): on a server tried on this
 * machine as the README starts it (no relay, so mail lands in the dev mailbox; its SMTP name a
 * .localhost one, its certificate self-signed), a person signs in, follows the screen to make an
 * API key, copies the nodemailer example from the page, runs it with the key in the environment,
 * and finds the message in the dev mailbox. The Python and swaks examples run too where those
 * programs are installed.
 */

const run = promisify(execFile);
const CODE = /code(?: is)?: ([A-Z0-9]{6})/;
const TO = 'you@example.com';
const SUBJECT = 'Hello from Posthorn';
const NODE_MODULES = path.resolve(import.meta.dirname, '../../node_modules');

const installed = (program: string, flag: string) => spawnSync(program, [flag]).status === 0;
const hasPython = installed('python3', '--version');
const hasSwaks = installed('swaks', '--version');

let server: TestServer;
let browser: TestBrowser;
let page: Page;
let account: SignupResult;
let folder: string;
let apiKey: string;

interface MailboxSummary {
  id: string;
  subject: string | null;
  envelope: { to: string[] };
}

/** The dev mailbox's messages to an address, newest first, as its screen reads them. */
async function mailboxTo(address: string): Promise<MailboxSummary[]> {
  const res = await fetch(`${server.url}/api/mailbox?to=${encodeURIComponent(address)}&limit=100`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: MailboxSummary[] }).data;
}

/** Signs in with the code the sign-in page emails, read from the dev mailbox. */
async function signIn(email: string) {
  await page.goto(`${server.url}/sign-in`);
  await page.getByLabel('Email', { exact: true }).fill(email);
  const before = new Set((await mailboxTo(email)).map((m) => m.id));
  await page.getByRole('button', { name: 'Email me a code' }).click();
  await page.getByLabel('Code', { exact: true }).waitFor();
  const fresh = await eventually(
    async () => (await mailboxTo(email)).find((m) => !before.has(m.id)) ?? false,
    {
      timeoutMs: 60_000,
      message: 'the sign-in code in the dev mailbox',
    },
  );
  const message = (await (await fetch(`${server.url}/api/mailbox/${fresh.id}`)).json()) as { text: string };
  const code = CODE.exec(message.text)?.[1];
  expect(code, message.text).toBeDefined();
  await page.getByLabel('Code', { exact: true }).fill(code as string);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Waits for one more message with the examples' subject in the dev mailbox than `count`. */
async function waitForExampleMail(count: number) {
  return eventually(
    async () => {
      const mail = (await mailboxTo(TO)).filter((m) => m.subject === SUBJECT);
      expect(mail.length).toBeGreaterThan(count);
      return mail;
    },
    { timeoutMs: 30_000, message: `message ${count + 1} of the examples in the dev mailbox` },
  );
}

/** The text of one example on the SMTP screen, as a person selecting it would copy it. */
async function exampleText(name: string): Promise<string> {
  await page.goto(`${server.url}/smtp`);
  const code = page.getByRole('region', { name }).locator('pre');
  await code.waitFor();
  return (await code.textContent()) ?? '';
}

/** Runs a program on a file of the example's text, with the key in POSTHORN_API_KEY. */
async function runExample(file: string, text: string, command: string, args: string[]) {
  writeFileSync(path.join(folder, file), text);
  return run(command, args, {
    cwd: folder,
    env: { ...process.env, POSTHORN_API_KEY: apiKey },
    timeout: 60_000,
  });
}

beforeAll(async () => {
  [server, browser] = await Promise.all([
    // as the README starts it: no relay (the dev mailbox), the default SMTP name and certificate
    startTestServer({ POSTHORN_SMTP_RELAY: '', POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0' }, [
      'api',
      'worker',
      'smtp',
    ]),
    launchBrowser(),
  ]);
  account = await signupConfirmedInDatabase(server);
  // where a person saves the example: nodemailer found as after npm install nodemailer there
  folder = mkdtempSync(path.join(tmpdir(), 'posthorn-smtp-example-'));
  symlinkSync(NODE_MODULES, path.join(folder, 'node_modules'), 'dir');
  page = await browser.context.newPage();
  // a missing element fails the step that looks for it, well before the test's own timeout
  page.setDefaultTimeout(15_000);
  await signIn(account.account.email);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe('the SMTP screen of a server tried locally', () => {
  it('names the address the server listens on and its self-signed certificate', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'SMTP' }).click();
    await page.getByRole('heading', { level: 1, name: 'SMTP' }).waitFor();
    const host = await page.getByLabel('Host', { exact: true }).inputValue();
    expect(host).toBe('127.0.0.1');
    expect(await page.getByLabel('Port', { exact: true }).inputValue()).toBe(
      String(server.runtime.smtp?.submissionPort),
    );
    const certificate = page.getByRole('region', { name: 'Certificate' });
    await certificate.getByText(/self-signed/).waitFor();
    expect(await certificate.getByLabel('Certificate file', { exact: true }).inputValue()).toMatch(
      /[\\/]tls[\\/]self-signed\.crt$/,
    );
    await certificate.getByText(/For local tries only/).waitFor();
    await checkScreen(page, 'SMTP (local server)', (p) =>
      p.getByRole('region', { name: 'Node.js with nodemailer' }).waitFor(),
    );
  });

  it('makes an API key where the screen says, and its nodemailer example delivers to the dev mailbox', async () => {
    await page.getByRole('link', { name: 'Create one under API keys' }).click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByLabel('Name', { exact: true }).fill('SMTP try');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new key' });
    apiKey = await shown.getByLabel('Secret key', { exact: true }).inputValue();
    expect(apiKey).toMatch(/^ph_/);
    await shown.getByRole('button', { name: 'I have copied it' }).click();

    const example = await exampleText('Node.js with nodemailer');
    expect(example).toContain("from 'nodemailer'");
    const { stdout } = await runExample('send.mjs', example, process.execPath, ['send.mjs']);
    const id = /250 2\.0\.0 Accepted: queued as <?([\w-]+)>?/.exec(stdout)?.[1];
    expect(id, stdout).toBeDefined();
    const [mail] = await waitForExampleMail(0);
    expect(mail.envelope.to).toEqual([TO]);
    // the message is one of the project's emails, under the id the reply named
    const email = await server.call('GET', `/v1/emails/${id}`, { key: apiKey });
    expect(email.status, JSON.stringify(email.body)).toBe(200);
  }, 120_000);

  it.skipIf(!hasPython)(
    'runs the Python example (smtplib) where python3 is installed',
    async () => {
      const before = (await mailboxTo(TO)).filter((m) => m.subject === SUBJECT).length;
      const example = await exampleText('Python with smtplib');
      await runExample('send.py', example, 'python3', ['send.py']);
      await waitForExampleMail(before);
    },
    60_000,
  );

  it.skipIf(!hasSwaks)(
    'runs the swaks example where swaks is installed',
    async () => {
      const before = (await mailboxTo(TO)).filter((m) => m.subject === SUBJECT).length;
      const example = await exampleText('swaks, from a shell');
      await runExample('send.sh', example, 'sh', ['send.sh']);
      await waitForExampleMail(before);
      // with --tls-verify alone swaks refuses the self-signed certificate; with its file it takes it,
      // as the example's comment says
      const check = /add (--tls-verify --tls-ca-path \S+)/.exec(example)?.[1];
      expect(check, example).toBeDefined();
      const unchecked = example.replace(' --tls ', ' --tls --tls-verify ');
      await expect(runExample('refused.sh', unchecked, 'sh', ['refused.sh'])).rejects.toThrow(/certificate/i);
      await runExample('check.sh', example.replace(' --tls ', ` --tls ${check} `), 'sh', ['check.sh']);
      await waitForExampleMail(before + 1);
    },
    60_000,
  );
});
