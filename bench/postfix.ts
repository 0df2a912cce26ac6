// Posthorn beside Postfix on this machine, the same messages to the same sink in one run:
//   (1) the ceiling: nodemailer's pool straight to the sink (no server in between), composing each
//       message as an application does (the issue's ceiling and bench/send.ts's); beside it, for
//       reference, the same pool pumping MIME built before it is timed (the SMTP dialogue alone)
//   (2) end to end: Postfix (Debian's, a private instance: queue file synced before its 250, relays
//       to the sink, signs nothing) fed over SMTP, vs Posthorn fed through POST /v1/emails/batch
//       (each message committed to PostgreSQL before the answer, DKIM-signed, delivered by the
//       worker process): from the first message in until the sink has them all
//   (3) the SMTP door: messages accepted per second over the same client pool, Postfix (each
//       message filed in its hold queue by a header check, so it only accepts) vs Posthorn's submission port
//       (AUTH with an API key; committed with its delivery job before the 250; its worker process
//       stopped meanwhile, so it only accepts), then Posthorn's delivery of them
// Before each figure the machine is left to go quiet (90 % idle), so no figure pays for the
// previous one's leftovers (Postfix purging its queue, PostgreSQL's autovacuum or checkpoint).
// Both servers take plain SMTP on loopback (no TLS on either, so the comparison is of the servers);
// Posthorn runs as three processes (api, worker, smtp) on an embedded PostgreSQL.
// Run: node bench/postfix.ts   (BENCH_MESSAGES, BENCH_CONNECTIONS to change the load)
import nodemailer from 'nodemailer';
import { freePort } from '../src/db/embedded.ts';
import { ensurePostfix, startPostfix } from './postfix-instance.ts';
import { json, machine, quietMachine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const messages = Number(process.env.BENCH_MESSAGES ?? 10_000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DOMAIN = 'bench.example';
const HTML = `<h1>Hello reader</h1><p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p><p><a href="https://example.org/read">Read more</a></p>`;
const message = (i: number | string) => ({
  from: `Bench <news@${DOMAIN}>`,
  to: `reader${i}@example.org`,
  subject: `Your weekly digest ${i}`,
  html: HTML,
});

const installed = ensurePostfix();
const sink = await startBenchSink();
const postfixPort = await freePort();
const submissionPort = await freePort();
const postfix = startPostfix(postfixPort, sink.port);
const server = await startBenchServer(
  {
    POSTHORN_SMTP_RELAY: sink.url,
    POSTHORN_SMTP_PORT: String(submissionPort),
    POSTHORN_MX_PORT: String(await freePort()),
    POSTHORN_SMTP_ALLOW_INSECURE_AUTH: '1',
    POSTHORN_WORKER_CONCURRENCY: '8',
  },
  ['api', 'worker', 'smtp'],
);

const pool = (port: number, auth?: { user: string; pass: string }, max = connections) =>
  nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    maxConnections: max,
    maxMessages: Number.POSITIVE_INFINITY,
    ...(auth ? { auth } : {}),
  });

/**
 * The messages of one figure as MIME, built before it is timed (by nodemailer, as a client would), so
 * that the clients spend the shared cores on the protocol and not on composing.
 */
async function compose(count: number, tag: string) {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const out: { envelope: { from: string; to: string[] }; raw: Buffer }[] = [];
  for (let i = 0; i < count; i++) {
    const m = message(`${tag}-${i}`);
    const built = await composer.sendMail(m);
    out.push({ envelope: { from: `news@${DOMAIN}`, to: [m.to] }, raw: built.message as Buffer });
  }
  return out;
}

/** Sends `count` messages through `transport` (2 in flight per connection); seconds and failures. */
async function pump(transport: ReturnType<typeof pool>, count: number, tag: string, max = connections) {
  const mails = await compose(count, tag);
  const started = performance.now();
  let next = 0;
  let failures = 0;
  let firstError = '';
  await Promise.all(
    Array.from({ length: max * 2 }, async () => {
      while (next < count) {
        const i = next++;
        try {
          await transport.sendMail(mails[i]);
        } catch (err) {
          failures++;
          firstError ||= (err as Error).message;
        }
      }
    }),
  );
  transport.close();
  return { seconds: (performance.now() - started) / 1000, failures, firstError };
}

const rate = (n: number, seconds: number) => Math.round(n / seconds);
let failed = false;
try {
  const { key, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const backlog = async () =>
    Number(
      (await db.query(`select count(*) from emails where status in ('queued', 'sending', 'deferred')`))
        .rows[0].count,
    );

  // (1) the ceiling: as bench/send.ts measures it, nodemailer composing each message
  await quietMachine();
  sink.reset();
  const directPool = pool(sink.port, undefined, 10);
  const directStart = performance.now();
  await Promise.all(Array.from({ length: messages }, (_, i) => directPool.sendMail(message(`direct-${i}`))));
  const ceiling = rate(messages, (performance.now() - directStart) / 1000);
  directPool.close();
  // and the SMTP dialogue alone: the same pool with the MIME built before the clock starts
  await quietMachine();
  sink.reset();
  const precomposed = await pump(pool(sink.port, undefined, 10), messages, 'precomposed', 10);
  const protocolOnly = rate(messages, precomposed.seconds);

  // (2) end to end: Postfix
  await quietMachine();
  sink.reset();
  const pfStart = performance.now();
  const pfSubmit = await pump(pool(postfixPort), messages, 'postfix');
  const pfComplete = await sink.waitForCount(messages, 600_000);
  const pfE2e = rate(messages, (performance.now() - pfStart) / 1000);

  // (2) end to end: Posthorn, batches of 100 through the API
  await quietMachine();
  sink.reset();
  const phStart = performance.now();
  for (let sent = 0; sent < messages; sent += 100) {
    const res = await json(
      `${server.url}/v1/emails/batch`,
      'POST',
      key,
      Array.from({ length: Math.min(100, messages - sent) }, (_, i) => message(`api-${sent + i}`)),
    );
    if (res.status !== 200) throw new Error(`batch refused: ${JSON.stringify(res.body)}`);
  }
  const phAcceptedIn = (performance.now() - phStart) / 1000;
  const phComplete = await sink.waitForCount(messages, 600_000);
  const phE2e = rate(messages, (performance.now() - phStart) / 1000);

  // (3) the SMTP door: Postfix holding its deliveries
  postfix.setHeld(true);
  await new Promise((r) => setTimeout(r, 2000)); // the reload settles
  await quietMachine();
  const pfAccept = await pump(pool(postfixPort), messages, 'pf-accept');
  postfix.purge();
  // Posthorn's submission port, its worker process stopped (SIGSTOP) so that it too only accepts;
  // then the worker goes on (SIGCONT) and delivers what was accepted
  const worker = server.pids.find((p) => p.role === 'worker')?.pid as number;
  await quietMachine();
  sink.reset();
  process.kill(worker, 'SIGSTOP');
  let phAccept: Awaited<ReturnType<typeof pump>>;
  try {
    phAccept = await pump(pool(submissionPort, { user: 'posthorn', pass: key }), messages, 'smtp');
  } finally {
    process.kill(worker, 'SIGCONT');
  }
  const smtpDelivered = await sink.waitForCount(messages, 600_000);
  const drainDeadline = Date.now() + 60_000;
  while ((await backlog()) > 0 && Date.now() < drainDeadline) await new Promise((r) => setTimeout(r, 500));
  await db.end();

  const pfAcceptRate = rate(messages - pfAccept.failures, pfAccept.seconds);
  const phAcceptRate = rate(messages - phAccept.failures, phAccept.seconds);
  console.log(`Posthorn beside Postfix, ${machine()}`);
  console.log(
    `postfix ${installed}; ${messages.toLocaleString()} messages of ~1.5 KB per figure; SMTP clients: nodemailer pool of ${connections} connections`,
  );
  console.log(
    `(1) ceiling, nodemailer straight to the sink (10 connections, composing each message): ${ceiling} msg/s; the SMTP dialogue alone (MIME built beforehand): ${protocolOnly} msg/s`,
  );
  console.log(
    `(2) end to end to the sink: Postfix ${pfE2e} msg/s${pfComplete ? '' : ' (INCOMPLETE)'} (submitted in ${pfSubmit.seconds.toFixed(1)} s, ${pfSubmit.failures} refused); Posthorn ${phE2e} msg/s${phComplete ? '' : ' (INCOMPLETE)'} (accepted in ${phAcceptedIn.toFixed(1)} s)`,
  );
  console.log(
    `    Posthorn / Postfix ${(phE2e / pfE2e).toFixed(2)} (target >= 2.5); Posthorn / ceiling ${(phE2e / ceiling).toFixed(2)} (target >= 0.6); Posthorn / the dialogue alone ${(phE2e / protocolOnly).toFixed(2)}`,
  );
  console.log(
    `(3) SMTP door, accepted/s: Postfix ${pfAcceptRate} (${pfAccept.failures} refused${pfAccept.firstError ? `: ${pfAccept.firstError}` : ''}); Posthorn submission ${phAcceptRate} (${phAccept.failures} refused${phAccept.firstError ? `: ${phAccept.firstError}` : ''}), all delivered: ${smtpDelivered}`,
  );
  console.log(
    `targets: e2e >= 2.5 x Postfix ${phE2e >= 2.5 * pfE2e ? 'met' : 'NOT met'}, >= 0.6 of the ceiling ${phE2e >= 0.6 * ceiling ? 'met' : 'NOT met'}, SMTP door >= 1000/s ${phAcceptRate >= 1000 ? 'met' : 'NOT met'} and above Postfix ${phAcceptRate > pfAcceptRate ? 'met' : 'NOT met'}`,
  );
  failed = !pfComplete || !phComplete || !smtpDelivered || phAccept.failures > 0;
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  postfix.stop();
  await server.stop();
  await sink.close();
}
process.exit(failed ? 1 : 0);
