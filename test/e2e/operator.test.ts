import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailboxTransport } from '../../src/delivery/mailbox.ts';
import { SHARED_SELECTOR } from '../../src/domain/sending-domains/dkim-keys.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-operator-'));
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** An operator command: the same database and server secret as the running server, as in production. */
function posthorn(...args: string[]) {
  const result = spawnSync(process.execPath, ['bin/posthorn.js', ...args], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: server.databaseUrl,
      POSTHORN_DATA_DIR: dataDir,
      POSTHORN_SECRET: server.runtime.ctx.config.secret,
      LOG_LEVEL: 'warn',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A client command: it calls this process's server over HTTP, so it must not block the event loop. */
function posthornClient(
  key: string,
  ...args: string[]
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/posthorn.js', ...args],
      {
        cwd: root,
        env: {
          ...process.env,
          POSTHORN_CONFIG_DIR: dataDir,
          POSTHORN_API_KEY: key,
          POSTHORN_API_URL: `${server.url}/v1`,
          LOG_LEVEL: 'warn',
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

/** The quoted strings of a TXT value as printed (none of ours needs an escape), checked against the 255 limit. */
function txtStrings(printed: string): string[] {
  expect(printed).toMatch(/^"[^"\\]*"( "[^"\\]*")*$/);
  const strings = [...printed.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
  for (const s of strings) expect(s.length).toBeLessThanOrEqual(255);
  return strings;
}

/** The value printed after `TYPE  NAME  ` on the line of that record. */
function printedValue(stdout: string, type: string, name: string): string {
  const line = stdout.split('\n').find((l) => l.trim().startsWith(`${type.padEnd(3)}  ${name}  `));
  expect(line, `no ${type} ${name} line in:\n${stdout}`).toBeDefined();
  return (line as string).trim().slice(`${type.padEnd(3)}  ${name}  `.length);
}

describe('operator commands', () => {
  it('posthorn admin plan moves a workspace to a plan, and fails with a message and exit 1 otherwise', async () => {
    const { workspace, project_key } = await server.signup();
    const ok = posthorn('admin', 'plan', workspace.id, 'pro');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/now on the pro plan/);
    const limits = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(limits.body.plan).toBe('pro');

    const unknownPlan = posthorn('admin', 'plan', workspace.id, 'gold');
    expect(unknownPlan.status).toBe(1);
    expect(unknownPlan.stderr).toMatch(/unknown plan "gold"/);
    const unknownWorkspace = posthorn('admin', 'plan', 'no-such-workspace', 'pro');
    expect(unknownWorkspace.status).toBe(1);
    expect(unknownWorkspace.stderr).toMatch(/Workspace not found/);
  });

  it('posthorn mailbox lists nothing when mail goes to a relay, and admin shared-domain prints the DKIM record', () => {
    const mailbox = posthorn('mailbox');
    expect(mailbox.status).toBe(0);
    expect(mailbox.stdout).toMatch(/dev mailbox is empty/);
    const records = posthorn('admin', 'shared-domain');
    expect(records.status).toBe(0);
    expect(records.stdout).toMatch(
      /TXT {2}posthorn1\._domainkey\.posthorn\.localhost {2}"v=DKIM1; k=rsa; p=/,
    );
  });

  it('admin shared-domain prints SPF and MX for the bounce domain, DMARC, and the DKIM key in quoted strings of at most 255', async () => {
    const records = posthorn('admin', 'shared-domain');
    expect(records.status, records.stderr).toBe(0);
    const out = records.stdout;
    const key = await server.runtime.ctx.db
      .selectFrom('dkim_keys')
      .select('public_key')
      .where('project_id', 'is', null)
      .where('domain', '=', 'posthorn.localhost')
      .where('selector', '=', SHARED_SELECTOR)
      .executeTakeFirstOrThrow();

    const dkim = txtStrings(printedValue(out, 'TXT', `${SHARED_SELECTOR}._domainkey.posthorn.localhost`));
    expect(dkim.length).toBe(2);
    expect(dkim.join('')).toBe(`v=DKIM1; k=rsa; p=${key.public_key}`);

    // shared-domain mail has its return path (bounces+...@posthorn.localhost) on the domain itself
    expect(txtStrings(printedValue(out, 'TXT', 'posthorn.localhost'))).toEqual([
      'v=spf1 include:_spf.posthorn.localhost ~all',
    ]);
    expect(printedValue(out, 'MX', 'posthorn.localhost')).toBe('10 mx.posthorn.localhost');
    expect(txtStrings(printedValue(out, 'TXT', '_spf.posthorn.localhost'))[0]).toMatch(/^v=spf1 ip4:/);
    expect(txtStrings(printedValue(out, 'TXT', '_dmarc.posthorn.localhost'))[0]).toMatch(
      /^v=DMARC1; p=none; rua=mailto:/,
    );
    expect(printedValue(out, 'MX', '*.inbound.posthorn.localhost')).toBe('10 mx.posthorn.localhost');
    expect(printedValue(out, 'A', 'mx.posthorn.localhost')).toMatch(/IPv4/);
  });

  it('posthorn domains add prints the DKIM key in quoted strings of at most 255 and the MX with its priority', async () => {
    const { account_key } = await server.signup();
    const added = await posthornClient(account_key.key, 'domains', 'add', 'split-key.example');
    expect(added.status, added.stderr).toBe(0);
    const domain = await server.runtime.ctx.db
      .selectFrom('domains')
      .innerJoin('dkim_keys', (j) =>
        j
          .onRef('dkim_keys.domain', '=', 'domains.name')
          .onRef('dkim_keys.selector', '=', 'domains.dkim_selector'),
      )
      .select(['domains.dkim_selector', 'dkim_keys.public_key'])
      .where('domains.name', '=', 'split-key.example')
      .executeTakeFirstOrThrow();
    const line = added.stdout
      .split('\n')
      .find((l) => l.startsWith(`TXT   ${domain.dkim_selector}._domainkey.split-key.example`));
    expect(line, added.stdout).toBeDefined();
    const dkim = txtStrings((line as string).replace(/^TXT\s+\S+\s+pending\s+/, ''));
    expect(dkim.length).toBe(2);
    expect(dkim.join('')).toBe(`v=DKIM1; k=rsa; p=${domain.public_key}`);
    expect(added.stdout).toMatch(/MX\s+bounces\.split-key\.example\s+pending\s+10 mx\.posthorn\.localhost/);
  });

  it('posthorn mailbox <id> prints a captured message decoded (soft line breaks joined), and --raw its source', async () => {
    // captured by the dev mailbox's own transport, as the worker does when no relay is set
    const source = [
      'From: Posthorn <no-reply@posthorn.localhost>',
      'To: Reader <reader@example.org>',
      'Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= and your code',
      'Date: Tue, 01 Jul 2025 10:00:00 +0000',
      'Message-ID: <cli-mailbox@posthorn.localhost>',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'Gr=C3=BC=C3=9Fe! Here is the code you asked for, cut by a soft line break: K7=',
      'Q2ZP',
      '',
    ].join('\r\n');
    const transport = createMailboxTransport(server.runtime.ctx.db, () => {});
    const result = await transport.send({
      from: 'bounces@posthorn.localhost',
      to: ['reader@example.org'],
      raw: Buffer.from(source),
      messageId: '<cli-mailbox@posthorn.localhost>',
      attempt: 1,
      tags: { email: 'cli-mailbox', project: null, stream: 'transactional' },
    });
    const id = /captured in the dev mailbox as (\S+)/.exec(result.response)?.[1] as string;

    const list = posthorn('mailbox');
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id} .*reader@example\\.org .*Grüße and your code`));

    const decoded = posthorn('mailbox', id);
    expect(decoded.status, decoded.stderr).toBe(0);
    expect(decoded.stdout).toMatch(/^From: +"?Posthorn"? <no-reply@posthorn\.localhost>$/m);
    expect(decoded.stdout).toMatch(/^To: +reader@example\.org$/m);
    expect(decoded.stdout).toMatch(/^Subject: +Grüße and your code$/m);
    expect(decoded.stdout).toMatch(/^Date: +2025-07-01T10:00:00\.000Z$/m);
    expect(decoded.stdout).toContain(
      'Grüße! Here is the code you asked for, cut by a soft line break: K7Q2ZP',
    );
    expect(decoded.stdout).not.toContain('=\n');
    expect(decoded.stdout).toContain(`posthorn mailbox ${id} --raw`);

    const raw = posthorn('mailbox', id, '--raw');
    expect(raw.status, raw.stderr).toBe(0);
    expect(raw.stdout).toBe(source);

    const unknown = posthorn('mailbox', '00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/Mailbox message not found/);
  });
});
