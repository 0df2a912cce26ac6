// Sending throughput on this machine, with server, PostgreSQL, worker and a local SMTP sink together:
//   (1) single-message POST /v1/emails accepted per second and latency
//   (2) messages per second accepted through POST /v1/emails/batch (100 per call)
//   (3) end to end: DKIM-signed messages delivered to the sink per second, next to nodemailer
//       sending straight to the same sink (the ceiling), and the ratio.
// Run: node bench/send.ts   (BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_E2E_MESSAGES to change the load)
import nodemailer from 'nodemailer';
import { load } from './load.ts';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const e2eMessages = Number(process.env.BENCH_E2E_MESSAGES ?? 20_000);
const DOMAIN = 'bench.example';

const sink = await startBenchSink();
// BENCH_ROLES=start runs every role in one process (npm start); the default runs API and worker as
// two processes on the same database, as a deployment scales
const roles = (process.env.BENCH_ROLES ?? 'api,worker').split(',');
const server = await startBenchServer(
  { POSTHORN_SMTP_RELAY: sink.url, POSTHORN_WORKER_CONCURRENCY: '8' },
  roles,
);
let failed = false;
try {
  const { key, db } = await readyBenchAccount(server, { domain: DOMAIN });

  const message = (i: number | string) => ({
    from: `Bench <news@${DOMAIN}>`,
    to: `reader${i}@example.org`,
    subject: `Your weekly digest ${i}`,
    html: `<h1>Hello reader ${i}</h1><p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p><p><a href="https://example.org/read">Read more</a></p>`,
    tags: [{ name: 'bench', value: 'send' }],
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  // (1) single messages
  const post = (path: string, body: string, conns: number, secs: number) =>
    load({ url: `${server.url}${path}`, method: 'POST', headers, body, connections: conns, seconds: secs });
  await post('/v1/emails', JSON.stringify(message('warm')), connections, 2);
  const single = await post('/v1/emails', JSON.stringify(message('single')), connections, seconds);
  const singleErrors = single.errors;

  // (2) batches of 100
  const batchBody = JSON.stringify(Array.from({ length: 100 }, (_, i) => message(i)));
  const batch = await post('/v1/emails/batch', batchBody, 8, seconds);
  const batchErrors = batch.errors;

  // let the worker drain what (1) and (2) queued before measuring delivery alone
  const backlog = async () =>
    Number(
      (await db.query(`select count(*) from emails where status in ('queued', 'sending', 'deferred')`))
        .rows[0].count,
    );
  const drainStart = Date.now();
  while ((await backlog()) > 0 && Date.now() - drainStart < 600_000)
    await new Promise((r) => setTimeout(r, 1000));
  const drainedIn = (Date.now() - drainStart) / 1000;

  // (3) end to end: accept e2eMessages through the batch endpoint, time until the sink has them all
  sink.reset();
  const e2eStart = performance.now();
  for (let sent = 0; sent < e2eMessages; sent += 100) {
    const res = await json(
      `${server.url}/v1/emails/batch`,
      'POST',
      key,
      Array.from({ length: Math.min(100, e2eMessages - sent) }, (_, i) => message(`e2e-${sent + i}`)),
    );
    if (res.status !== 200) throw new Error(`batch refused: ${JSON.stringify(res.body)}`);
  }
  const acceptedIn = (performance.now() - e2eStart) / 1000;
  const complete = await sink.waitForCount(e2eMessages, 600_000);
  const e2eSeconds = (performance.now() - e2eStart) / 1000;
  const dkimSigned = (
    await db.query(`select count(*) from emails where status = 'sent' and last_response is not null`)
  ).rows[0].count;
  await db.end();

  // the ceiling: nodemailer's pool straight to the same sink, no Posthorn, no DKIM, no database
  sink.reset();
  const direct = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: sink.port,
    secure: false,
    ignoreTLS: true,
    maxConnections: 10,
    maxMessages: Number.POSITIVE_INFINITY,
  });
  const directStart = performance.now();
  const html = message('x').html;
  await Promise.all(
    Array.from({ length: e2eMessages }, (_, i) =>
      direct.sendMail({
        from: `news@${DOMAIN}`,
        to: `reader${i}@example.org`,
        subject: `Your weekly digest ${i}`,
        html,
      }),
    ),
  );
  const directSeconds = (performance.now() - directStart) / 1000;
  direct.close();

  const e2eRate = e2eMessages / e2eSeconds;
  const directRate = e2eMessages / directSeconds;
  const batchRate = batch.rps * 100;
  console.log(`Sending benchmark, ${machine()}, processes: ${roles.join(' + ')}`);
  console.log(`(1) POST /v1/emails, ${connections} connections, ${seconds} s, load from ${single.tool}:`);
  console.log(
    `    accepted/s ${single.rps.toFixed(0)}; latency ms p50 ${single.p50} p90 ${single.p90} p99 ${single.p99}; errors ${singleErrors}`,
  );
  console.log(`(2) POST /v1/emails/batch (100 messages), 8 connections, ${seconds} s:`);
  console.log(
    `    messages accepted/s ${batchRate.toFixed(0)}; request latency ms p50 ${batch.p50} p99 ${batch.p99}; errors ${batchErrors}`,
  );
  console.log(
    `    (backlog of ${(single.total + batch.total * 100).toLocaleString()} messages drained in ${drainedIn.toFixed(1)} s)`,
  );
  console.log(
    `(3) end to end, ${e2eMessages} DKIM-signed messages: accepted in ${acceptedIn.toFixed(1)} s, all in the sink after ${e2eSeconds.toFixed(1)} s${complete ? '' : ' (INCOMPLETE)'}`,
  );
  console.log(
    `    Posthorn ${e2eRate.toFixed(0)} msg/s; nodemailer straight to the sink ${directRate.toFixed(0)} msg/s; ratio ${(e2eRate / directRate).toFixed(2)}`,
  );
  console.log(
    `    distinct Message-IDs received ${sink.messageIds.size}; messages marked sent ${dkimSigned}`,
  );
  console.log(
    `targets: single >= 1500/s ${single.rps >= 1500 ? 'met' : 'NOT met'}, p99 < 100 ms ${single.p99 < 100 ? 'met' : 'NOT met'}, batch >= 10000/s ${batchRate >= 10_000 ? 'met' : 'NOT met'}, end to end >= 1000/s ${e2eRate >= 1000 ? 'met' : 'NOT met'}`,
  );
  failed = !complete || singleErrors > 0 || batchErrors > 0;
} finally {
  await server.stop();
  await sink.close();
}
process.exit(failed ? 1 : 0);
