// SMTP throughput on this machine, with Posthorn (every role in one process, `npm start`), PostgreSQL,
// a local DNS server, the SMTP sink and the clients together:
//   (1) submission: messages/s accepted over STARTTLS + AUTH PLAIN (API key as password), each
//       committed with its delivery job before the 250, while the worker delivers them to the sink
//   (2) inbound MX: messages/s received, parsed, authenticated (SPF, DKIM, DMARC, ARC against the
//       local DNS server) and stored with their raw source and attachment
// Run: node bench/smtp.ts   (BENCH_MESSAGES, BENCH_CONNECTIONS to change the load)
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import { freePort } from '../src/db/embedded.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import type { MailOptions } from '../test/helpers/smtp-clients.ts';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const messages = Number(process.env.BENCH_MESSAGES ?? 5_000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 8);
const DOMAIN = 'bench.example';

const sink = await startBenchSink();
const dns = await startDnsServer();
dns.zone.set('sender.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
dns.zone.set('_dmarc.sender.example', [{ type: 'TXT', data: 'v=DMARC1; p=none' }]);
const submissionPort = await freePort();
const mxPort = await freePort();
const server = await startBenchServer(
  {
    POSTHORN_SMTP_RELAY: sink.url,
    POSTHORN_SMTP_PORT: String(submissionPort),
    POSTHORN_MX_PORT: String(mxPort),
    POSTHORN_DNS_SERVERS: dns.address,
    POSTHORN_WORKER_CONCURRENCY: '8',
  },
  ['start'],
);

/** Sends `count` messages over a pool of `connections`, returns the seconds it took. */
async function pump(
  transport: ReturnType<typeof nodemailer.createTransport>,
  count: number,
  make: (i: number) => MailOptions,
) {
  const started = performance.now();
  let next = 0;
  let failures = 0;
  let firstError = '';
  await Promise.all(
    Array.from({ length: connections * 2 }, async () => {
      while (next < count) {
        const i = next++;
        try {
          await transport.sendMail(make(i));
        } catch (err) {
          failures++;
          firstError ||= (err as Error).message;
        }
      }
    }),
  );
  return { seconds: (performance.now() - started) / 1000, failures, firstError };
}

let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const me = await json(`${server.url}/v1/me`, 'GET', key);
  const inboundDomain = me.body.inbound.domain as string;
  const html = `<h1>Hello</h1><p>${'Some words of a typical transactional message. '.repeat(20)}</p>`;

  // (1) submission
  const submission = nodemailer.createTransport({
    pool: true,
    maxConnections: connections,
    maxMessages: Number.POSITIVE_INFINITY,
    host: '127.0.0.1',
    port: submissionPort,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: 'posthorn', pass: key },
  });
  await pump(submission, 50, (i) => ({
    from: `news@${DOMAIN}`,
    to: `warm${i}@example.org`,
    subject: 'warm',
    html,
  }));
  sink.reset();
  const sub = await pump(submission, messages, (i) => ({
    from: `Bench <news@${DOMAIN}>`,
    to: `reader${i}@example.org`,
    subject: `Receipt ${i}`,
    html,
  }));
  submission.close();
  const delivered = await sink.waitForCount(messages, 300_000);

  // (2) inbound MX: ~6 KB messages with a 4 KB attachment, plain SMTP as another MTA delivers
  const attachment = randomBytes(4096);
  const mx = nodemailer.createTransport({
    pool: true,
    maxConnections: connections,
    maxMessages: Number.POSITIVE_INFINITY,
    host: '127.0.0.1',
    port: mxPort,
    ignoreTLS: true,
  });
  await pump(mx, 50, (i) => ({
    from: 'alice@sender.example',
    to: `warm${i}@${inboundDomain}`,
    subject: 'warm',
    text: 'x',
  }));
  const inbound = await pump(mx, messages, (i) => ({
    from: 'Alice <alice@sender.example>',
    to: `support+${i}@${inboundDomain}`,
    subject: `Question ${i}`,
    text: 'Hello, I have a question about my order.\n'.repeat(20),
    html: `<p>${'Hello, I have a question about my order. '.repeat(20)}</p>`,
    attachments: [{ filename: 'invoice.pdf', content: attachment, contentType: 'application/pdf' }],
  }));
  mx.close();
  const stored = Number(
    (await db.query('select count(*) from inbound_messages where project_id = $1', [projectId])).rows[0]
      .count,
  );
  await db.end();

  console.log(`SMTP benchmark, ${machine()}, one process (npm start), ${connections} client connections`);
  console.log(
    `(1) submission, STARTTLS + AUTH PLAIN, ${messages} messages: ${(messages / sub.seconds).toFixed(0)} accepted/s (${sub.seconds.toFixed(1)} s, ${sub.failures} refused${sub.firstError ? `: ${sub.firstError}` : ''}); all delivered to the sink: ${delivered ? 'yes' : 'NO'}`,
  );
  console.log(
    `(2) inbound MX, parse + SPF/DKIM/DMARC/ARC + store, ${messages} messages of ~7 KB: ${(messages / inbound.seconds).toFixed(0)} stored/s (${inbound.seconds.toFixed(1)} s, ${inbound.failures} refused${inbound.firstError ? `: ${inbound.firstError}` : ''}); rows stored ${stored - 50}`,
  );
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await server.stop();
  await sink.close();
  await dns.close();
}
process.exit(failed ? 1 : 0);
