import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageWith, zipBomb } from '../helpers/dmarc.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Decompression bombs mailed to a domain's public DMARC report address (issue 47, build item 1): a
 * 49 KB zip whose 30 central-directory entries all point at one member of 49 MB, and one message
 * of 20 gzip attachments of ~48 KB that each expand to 49 MB. Each is answered 250 and kept as
 * unreadable with its reason, while /healthz answers before it (asked once the whole message is
 * with the server), and the server process's resident memory grows by less than 200 MB meanwhile
 * (its peak, VmHWM, reset before each). The server runs in this process (test/helpers/server.ts).
 */

const MB = 1024 * 1024;
const REPORTER = 'dmarc@bomber.example';

let server: TestServer;
let dns: TestDnsServer;
let key: string;
let domainId: string;
let rua: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  domainId = (await insertVerifiedDomain(server, account.project.id, 'bombed.example')).id;
  const domain = (await server.call('GET', `/v1/domains/${domainId}`, { key })).body;
  rua = domain.records
    .find((r: { name: string }) => r.name === '_dmarc.bombed.example')
    .value.split('mailto:')[1];
}, 60_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const kb = (field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);

/** Resets this process's peak resident memory to what it holds now, and answers that (kB). */
function resetPeak(): number {
  writeFileSync('/proc/self/clear_refs', '5');
  return kb('VmRSS');
}

/** One SMTP reply, read from a raw socket. */
function replies(socket: net.Socket) {
  let buffered = '';
  const waiting: ((reply: { code: number; text: string }) => void)[] = [];
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = /^\d{3} .*\r\n/m.exec(buffered); end; end = /^\d{3} .*\r\n/m.exec(buffered)) {
      const text = buffered.slice(0, end.index + end[0].length);
      buffered = buffered.slice(text.length);
      waiting.shift()?.({ code: Number(end[0].slice(0, 3)), text });
    }
  });
  return () => new Promise<{ code: number; text: string }>((resolve) => waiting.push(resolve));
}

/**
 * Delivers `raw` to the MX by hand; once its last byte (the final dot) is written to the socket,
 * asks /healthz; answers which of the two answered first, and both answers.
 */
async function deliverAndAskHealth(raw: string) {
  const socket = net.connect({ host: '127.0.0.1', port: server.runtime.smtp?.mxPort as number });
  const next = replies(socket);
  const say = (line: string) => {
    const reply = next();
    socket.write(`${line}\r\n`);
    return reply;
  };
  expect((await next()).code).toBe(220);
  expect((await say('EHLO bomber.example')).code).toBe(250);
  expect((await say(`MAIL FROM:<${REPORTER}>`)).code).toBe(250);
  expect((await say(`RCPT TO:<${rua}>`)).code).toBe(250);
  expect((await say('DATA')).code).toBe(354);
  const order: string[] = [];
  const answer = next().then((reply) => {
    order.push('report');
    return reply;
  });
  await new Promise<void>((resolve) => socket.write(`${raw}\r\n.\r\n`, () => resolve()));
  const health = fetch(`${server.url}/healthz`).then(async (res) => {
    order.push('health');
    return { status: res.status, body: await res.json() };
  });
  const [reply, healthz] = await Promise.all([answer, health]);
  socket.end('QUIT\r\n');
  return { order, reply, healthz };
}

const unreadable = async () =>
  (
    await server.runtime.ctx.db
      .selectFrom('dmarc_reports')
      .select(['kind', 'reason', 'file'])
      .where('domain_id', '=', domainId)
      .orderBy('received_at')
      .execute()
  ).map((r) => ({ kind: r.kind, reason: r.reason }));

describe('decompression bombs at the report address', () => {
  it('a 49 KB zip of 30 entries on one 49 MB member: refused while /healthz answers', async () => {
    const bomb = zipBomb(49 * MB, 30);
    expect(bomb.length).toBeLessThan(60 * 1024);
    const raw = messageWith(rua, REPORTER, [
      { name: 'bomber.example!bombed.example!1!2.zip', content: bomb },
    ]);
    const before = resetPeak();
    const { order, reply, healthz } = await deliverAndAskHealth(raw);
    const grown = (kb('VmHWM') - before) / 1024;
    expect(reply.code, reply.text).toBe(250);
    expect(healthz).toEqual({ status: 200, body: { status: 'ok' } });
    expect(order).toEqual(['health', 'report']);
    expect(grown, `resident memory grew by ${grown.toFixed(0)} MB`).toBeLessThan(200);
    expect(await unreadable()).toEqual([
      { kind: 'unreadable', reason: expect.stringMatching(/^the zip entries .* overlap .*refused$/) },
    ]);
  });

  it('20 gzip attachments of ~48 KB, each 49 MB inflated: refused past 50 MB in all, /healthz answering', async () => {
    const one = gzipSync(Buffer.alloc(49 * MB), { level: 9 });
    expect(one.length).toBeLessThan(60 * 1024);
    const files = Array.from({ length: 20 }, (_, i) => ({
      name: `bomber.example!bombed.example!${i}.xml.gz`,
      content: one,
    }));
    const raw = messageWith(rua, REPORTER, files);
    const before = resetPeak();
    const { order, reply, healthz } = await deliverAndAskHealth(raw);
    const grown = (kb('VmHWM') - before) / 1024;
    expect(reply.code, reply.text).toBe(250);
    expect(healthz.status).toBe(200);
    expect(order).toEqual(['health', 'report']);
    expect(grown, `resident memory grew by ${grown.toFixed(0)} MB`).toBeLessThan(200);
    expect((await unreadable()).at(-1)).toEqual({
      kind: 'unreadable',
      reason: 'the reports decompress to more than 50 MB in all (the limit of one message)',
    });
  });
});
