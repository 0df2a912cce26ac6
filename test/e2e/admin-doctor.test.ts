import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Page } from 'playwright-core';
import selfsigned from 'selfsigned';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { sharedDomainKey } from '../../src/domain/sending-domains/dkim-keys.ts';
import { sharedDomainRecords } from '../../src/domain/sending-domains/dns-records.ts';
import { launchBrowser, type TestBrowser } from '../helpers/browser.ts';
import { checkScreen, signInWithCode } from '../helpers/dashboard.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { publishRecords } from '../helpers/dns-zone.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * `posthorn admin doctor` and the Production readiness page (issue 48, build item 4), on the test
 * network only (127.0.0.0/8, a DNS server of the test's own): a server as it comes (names under
 * .localhost, plain http, a self-signed SMTP certificate) fails with what to do, and the operator
 * sees the same on the page; then a server given real names fails each check of DNS, TLS, the
 * relay's login, port 25 and reverse DNS, and passes each as it is put right.
 */

const root = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-doctor-'));
let dns: TestDnsServer;
let browser: TestBrowser;
const closers: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  [dns, browser] = await Promise.all([startDnsServer(), launchBrowser()]);
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await browser?.close();
  await dns?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Check {
  id: string;
  status: string;
  title: string;
  detail: string;
  fix: string | null;
}

/** The real CLI against a server in this process: asynchronous, so the server keeps answering. */
function doctor(
  server: TestServer,
  ...args: string[]
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/posthorn.js', 'admin', 'doctor', '--api-url', `${server.url}/v1`, ...args],
      { cwd: root, env: { ...process.env, LOG_LEVEL: 'warn' }, timeout: 90_000 },
      (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function doctorJson(server: TestServer): Promise<{ ready: boolean; checks: Map<string, Check> }> {
  const run = await doctor(server, '--json');
  const report = JSON.parse(run.stdout) as { ready: boolean; checks: Check[] };
  expect(run.status, run.stderr).toBe(report.ready ? 0 : 1);
  return { ready: report.ready, checks: new Map(report.checks.map((c) => [c.id, c])) };
}

/** The line of a check in the text output, and the fix printed under it. */
function printed(stdout: string, title: string): { line: string; fix: string } {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.includes(`${title}:`));
  expect(at, `no "${title}" in:\n${stdout}`).toBeGreaterThanOrEqual(0);
  const next = lines[at + 1] ?? '';
  return { line: lines[at], fix: next.trim().startsWith('fix:') ? next.trim() : '' };
}

describe('a server as it comes', () => {
  let server: TestServer;
  let page: Page;

  beforeAll(async () => {
    server = await startTestServer(
      {
        POSTHORN_DNS_SERVERS: dns.address,
        POSTHORN_SMTP_PORT: String(await freePort()),
        POSTHORN_MX_PORT: '0',
        POSTHORN_PORT25_PROBE: `127.0.0.1:${await freePort()}`,
      },
      ['api', 'smtp', 'worker'],
    );
    closers.push(() => server.close());
    page = await browser.context.newPage();
    page.setDefaultTimeout(15_000);
  }, 60_000);

  it('posthorn admin doctor names what is left, each with its fix, and exits 1', async () => {
    const run = await doctor(server);
    expect(run.status, run.stderr).toBe(1);
    const out = run.stdout;
    expect(printed(out, 'Shared domain names set').line).toContain('[FAIL]');
    expect(printed(out, 'Shared domain names set').fix).toMatch(
      /Set POSTHORN_SHARED_DOMAIN to a domain you own/,
    );
    expect(printed(out, 'Public URL reachable').line).toMatch(/\[FAIL\].*only this machine reaches/);
    expect(printed(out, 'Public URL reachable').fix).toMatch(/Set POSTHORN_PUBLIC_URL to the https address/);
    expect(printed(out, 'TLS certificate of localhost').line).toMatch(/\[FAIL\].*plain http/);
    const smtp = printed(out, 'TLS certificate of smtp.posthorn.localhost (SMTP submission)');
    expect(smtp.line).toMatch(/\[FAIL\].*not trusted.*self-signed/);
    expect(smtp.fix).toMatch(/POSTHORN_TLS_CERT and POSTHORN_TLS_KEY/);
    expect(printed(out, 'DKIM record of the shared domain').line).toMatch(/\[skip\].*local name/);
    expect(printed(out, 'Relay default accepts the login').line).toContain('[ok]');
    expect(printed(out, 'Bulk-sender gate').line).toMatch(/\[warn\].*POSTHORN_BULK_GATE is off/);
    expect(out).toMatch(/checks? failed: not ready for real delivery yet\.$/m);

    const json = await doctorJson(server);
    expect(json.ready).toBe(false);
    expect(json.checks.get('shared_domain_names')).toMatchObject({ status: 'fail' });
    expect(json.checks.get('shared_domain_names')?.fix).toMatch(/POSTHORN_SHARED_DOMAIN/);
    expect(json.checks.get('outbound_route')).toMatchObject({ status: 'pass' });
  });

  it('the operator sees the same on the Production readiness page', async () => {
    const account = await server.signupConfirmed();
    await signInWithCode(page, server, account.account.email);
    await page.getByRole('link', { name: 'Production readiness' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Production readiness' }).waitFor();
    const names = page.getByRole('listitem').filter({ hasText: 'Shared domain names set' });
    await names.waitFor();
    expect(await names.textContent()).toMatch(/Failed.*posthorn\.localhost.*Set POSTHORN_SHARED_DOMAIN/s);
    expect(await page.getByText(/not ready for real delivery/i).count()).toBeGreaterThan(0);
    await checkScreen(page, 'Production readiness', (p) =>
      p.getByRole('heading', { level: 1, name: 'Production readiness' }).waitFor(),
    );
    // a domain's records name the server's .localhost names: its page says they are placeholders
    const added = await server.call('POST', '/v1/domains', {
      key: account.project_key.key,
      body: { domain: 'placeholder.example' },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    await page.goto(`${server.url}/domains/${added.body.id}`);
    await page.getByText('These records are placeholders.').waitFor();
    expect(await page.getByRole('status').filter({ hasText: 'placeholders' }).textContent()).toMatch(
      /must first give it its real names.*POSTHORN_SHARED_DOMAIN/,
    );
    // a browser elsewhere is refused by the API, so the page is the operator's
    const elsewhere = await server.app.inject({
      method: 'GET',
      url: '/v1/admin/readiness',
      remoteAddress: '198.51.100.4',
    });
    expect(elsewhere.statusCode).toBe(403);
    await page.close();
    await server.close();
    closers.pop();
  }, 90_000);
});

/** A certificate authority of the test's own, and a certificate it signs for `name`. */
async function authority() {
  const ca = await selfsigned.generate([{ name: 'commonName', value: 'Doctor Test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
  const issue = async (name: string) => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
      keySize: 2048,
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }],
    });
    return { key: pems.private, cert: pems.cert };
  };
  return { cert: ca.cert, issue };
}

describe('a server given its real names, put right one thing at a time', () => {
  let server: TestServer;
  let ca: Awaited<ReturnType<typeof authority>>;
  let relayAccount = false;
  const ports = { web: 0, probe: 0, relay: 0, smtp: 0 };

  beforeAll(async () => {
    ca = await authority();
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    const smtpPair = await ca.issue('smtp.posthorn.test');
    writeFileSync(path.join(dir, 'smtp.key'), smtpPair.key);
    writeFileSync(path.join(dir, 'smtp.crt'), smtpPair.cert);
    // the relay takes the login only once the account exists at the provider
    const relay = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      closeTimeout: 1000,
      onAuth(auth, _session, callback) {
        if (!relayAccount || auth.password !== 'secret')
          return callback(new Error('5.7.8 Authentication credentials invalid'));
        callback(null, { user: auth.username });
      },
    });
    await new Promise<void>((resolve) => relay.listen(ports.relay, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => relay.close(() => resolve())));
    const routes = path.join(dir, 'routes.json');
    writeFileSync(
      routes,
      JSON.stringify({
        routes: {
          relay: { type: 'smtp', url: `smtp://posthorn:secret@127.0.0.1:${ports.relay}` },
          direct: {
            type: 'direct',
            port: ports.probe,
            allow_networks: ['127.0.0.0/8'],
            source_addresses: [{ address: '127.0.0.1', ehlo: 'out.posthorn.test' }],
          },
        },
        rules: [
          { match: { stream: 'transactional' }, routes: ['relay'] },
          { match: {}, routes: ['direct'] },
        ],
      }),
    );
    server = await startTestServer(
      {
        POSTHORN_SHARED_DOMAIN: 'posthorn.test',
        POSTHORN_PUBLIC_URL: `https://app.posthorn.test:${ports.web}`,
        POSTHORN_DNS_SERVERS: dns.address,
        POSTHORN_SMTP_PORT: String(ports.smtp),
        POSTHORN_MX_PORT: '0',
        POSTHORN_TLS_KEY: path.join(dir, 'smtp.key'),
        POSTHORN_TLS_CERT: path.join(dir, 'smtp.crt'),
        POSTHORN_ROUTES: routes,
        POSTHORN_SMTP_RELAY: '',
        POSTHORN_PORT25_PROBE: `127.0.0.1:${ports.probe}`,
        POSTHORN_BULK_GATE: 'enforce',
      },
      ['api', 'smtp'],
    );
    closers.push(() => server.close());
  }, 60_000);

  it('fails each check with its fix, then passes each as it is put right', async () => {
    // 1. nothing published, nothing trusted, the relay account missing, port 25 closed
    const first = await doctor(server);
    expect(first.status, first.stderr).toBe(1);
    expect(printed(first.stdout, 'Shared domain names set').line).toContain('[ok]');
    const before = await doctorJson(server);
    const failing = (id: string, detail: RegExp, fix: RegExp) => {
      const check = before.checks.get(id);
      expect(check, id).toMatchObject({ status: 'fail' });
      expect(check?.detail, id).toMatch(detail);
      expect(check?.fix, id).toMatch(fix);
    };
    failing(
      'public_url',
      /app\.posthorn\.test has no A or AAAA record/,
      /Publish an A \(or AAAA\) record for app\.posthorn\.test/,
    );
    failing(
      'web_tls',
      /No certificate could be checked for app\.posthorn\.test: .*no A or AAAA record/,
      /Publish an A \(or AAAA\) record for app\.posthorn\.test/,
    );
    failing(
      'smtp_tls',
      /No SMTP submission server answers at smtp\.posthorn\.test/,
      /Publish an A record for smtp\.posthorn\.test/,
    );
    failing(
      'shared_domain_dkim',
      /posthorn1\._domainkey\.posthorn\.test has no TXT record/,
      /posthorn admin shared-domain/,
    );
    failing('shared_domain_spf', /posthorn\.test has no SPF record/, /include:_spf\.posthorn\.test/);
    failing('shared_domain_dmarc', /_dmarc\.posthorn\.test has no DMARC record/, /v=DMARC1/);
    failing('shared_domain_mx', /posthorn\.test has no MX record/, /MX posthorn\.test 10 mx\.posthorn\.test/);
    failing(
      'relay_relay',
      /refused Posthorn.*Authentication credentials invalid/,
      /user name and password in the route relay/,
    );
    failing(
      'port_25',
      /No connection to the mail server 127\.0\.0\.1:\d+.*ECONNREFUSED/,
      /ask yours to open it/,
    );
    failing('reverse_dns_direct', /127\.0\.0\.1: has no reverse DNS/, /reverse DNS \(PTR\)/);
    expect(before.checks.get('bulk_gate')).toMatchObject({ status: 'pass' });

    // 2. the records published at the DNS provider, placeholders replaced with real values
    const key = await sharedDomainKey(server.runtime.ctx);
    const records = sharedDomainRecords(server.runtime.ctx.config, key).map((r) => ({
      ...r,
      value: r.value
        .replace('<your sending IPs>', '192.0.2.10')
        .replace('<a mailbox you read for DMARC reports>', 'dmarc@example.com'),
    }));
    publishRecords(
      dns,
      records.filter((r) => r.type === 'TXT' || r.type === 'MX'),
    );
    for (const host of ['app.posthorn.test', 'smtp.posthorn.test', 'mx.posthorn.test', 'out.posthorn.test'])
      dns.zone.set(host, [{ type: 'A', address: '127.0.0.1' }]);
    dns.zone.set('1.0.0.127.in-addr.arpa', [{ type: 'PTR', domain: 'out.posthorn.test' }]);
    // the SPF of the sending addresses names another address than the direct route's: a receiver
    // judges mail from 127.0.0.1 a softfail (the domain says ~all)
    const wrongSpf = await doctorJson(server);
    expect(wrongSpf.checks.get('shared_domain_spf')).toMatchObject({ status: 'fail' });
    expect(wrongSpf.checks.get('shared_domain_spf')?.detail).toMatch(
      /SPF of posthorn\.test is softfail for 127\.0\.0\.1.*add ip4:127\.0\.0\.1 to the record of _spf\.posthorn\.test/,
    );
    dns.zone.set('_spf.posthorn.test', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    const published = await doctorJson(server);
    for (const id of [
      'shared_domain_dkim',
      'shared_domain_spf',
      'shared_domain_dmarc',
      'shared_domain_mx',
      'reverse_dns_direct',
    ])
      expect(published.checks.get(id), id).toMatchObject({ status: 'pass', fix: null });
    // the names now lead somewhere: what is left is the certificates' trust, the proxy, the relay and port 25
    expect(published.checks.get('smtp_tls')?.detail).toMatch(/not trusted for smtp\.posthorn\.test/);
    expect(published.checks.get('public_url')?.detail).toMatch(/ECONNREFUSED/);
    expect(published.checks.get('web_tls')?.detail).toMatch(/No certificate could be checked.*ECONNREFUSED/);
    for (const id of ['web_tls', 'relay_relay', 'port_25'])
      expect(published.checks.get(id), id).toMatchObject({ status: 'fail' });

    // 3. certificates from an authority this machine trusts, the https proxy in front, the
    // relay account created, outbound port 25 opened
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), ca.cert]);
    const webPair = await ca.issue('app.posthorn.test');
    const proxy = https.createServer(webPair, (req, res) => {
      const upstream = http.request(
        `${server.url}${req.url}`,
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(ports.web, '127.0.0.1', resolve));
    closers.push(() => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(resolve));
    });
    relayAccount = true;
    const sockets = new Set<net.Socket>();
    const mx = net.createServer((socket) => {
      sockets.add(socket.on('close', () => sockets.delete(socket)).on('error', () => {}));
      socket.write('220 mx.probe.test ESMTP\r\n');
    });
    await new Promise<void>((resolve) => mx.listen(ports.probe, '127.0.0.1', resolve));
    closers.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => mx.close(resolve));
    });

    const ready = await doctor(server);
    expect(ready.status, ready.stdout + ready.stderr).toBe(0);
    expect(ready.stdout).not.toContain('[FAIL]');
    expect(ready.stdout).toMatch(/^Ready for production\.$/m);
    expect(printed(ready.stdout, 'TLS certificate of app.posthorn.test').line).toMatch(
      /\[ok\].*issued by Doctor Test CA/,
    );
    expect(printed(ready.stdout, 'Outbound port 25 open').line).toMatch(/\[ok\].*220 mx\.probe\.test/);
    const after = await doctorJson(server);
    expect(after.ready).toBe(true);
    expect([...after.checks.values()].filter((c) => c.status !== 'pass')).toEqual([]);
  }, 120_000);
});
