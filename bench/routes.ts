// Routes under load (issue 31's bench): a campaign drains through a route limited to
// BENCH_ROUTE_RATE msg/s (default 500) while transactional mail is sent at BENCH_TX_PER_SECOND
// (default 20) through another route. Printed:
//   (1) the campaign's rate at the sink over its steady part (from its 5th to its 95th percentile
//       arrival), against the route's limit: held within 5 % of it?
//   (2) the transactional messages from the HTTP answer to the sink's receipt: p50 / p99 / max, and
//       whether every one arrived
//   (3) how many campaign messages arrived in the busiest second
// Posthorn runs as `api` and `worker` processes on an embedded PostgreSQL; both sinks are SMTP
// servers in this process on 127.0.0.1. Contacts are made set-based in SQL (not measured).
// Run: node bench/routes.ts  (BENCH_RECIPIENTS, default 100,000; BENCH_ROUTE_RATE; BENCH_TX_PER_SECOND;
// BENCH_WORKER_CONCURRENCY; BENCH_MAX_SECONDS)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { guardBench, json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const recipients = Number(process.env.BENCH_RECIPIENTS ?? 100_000);
const routeRate = Number(process.env.BENCH_ROUTE_RATE ?? 500);
const txPerSecond = Number(process.env.BENCH_TX_PER_SECOND ?? 20);
const concurrency = process.env.BENCH_WORKER_CONCURRENCY ?? '10';
const maxSeconds = Number(process.env.BENCH_MAX_SECONDS ?? 1800);
const DOMAIN = 'bench.example';

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : Number.NaN;
const ms = (x: number) => `${Math.round(x)}`;

const [bulkSink, txSink] = await Promise.all([startBenchSink(), startBenchSink()]);
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-routes-'));
const routesFile = path.join(dir, 'routes.json');
writeFileSync(
  routesFile,
  JSON.stringify({
    routes: {
      bulk: { type: 'smtp', url: bulkSink.url, rate_per_second: routeRate, pool_size: 20 },
      transactional: { type: 'smtp', url: txSink.url, pool_size: 10 },
    },
    rules: [
      { match: { stream: 'transactional' }, routes: ['transactional'] },
      { match: {}, routes: ['bulk'] },
    ],
  }),
);
const server = await startBenchServer(
  { POSTHORN_ROUTES: routesFile, POSTHORN_SMTP_RELAY: '', POSTHORN_WORKER_CONCURRENCY: concurrency },
  ['api', 'worker'],
);
const guard = guardBench('bench:routes', maxSeconds, async () => {
  await server.stop();
  await Promise.all([bulkSink.close(), txSink.close()]);
  rmSync(dir, { recursive: true, force: true });
});

let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server, { domain: DOMAIN });
  db.on('error', () => {});
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await json(`${server.url}${url}`, method, key, body);
    if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  await call('PATCH', '/v1/me/footer', { address: 'Posthorn Bench Ltd, 2 High Street, Leeds LS1 1AA' });
  const list = await call('POST', '/v1/lists', { name: 'Readers' });
  await db.query(
    `with made as (
       insert into contacts (project_id, email, first_name)
       select $1, 'reader' || g || '@readers.example', 'Reader' || g from generate_series(1, $2::int) g
       returning id
     )
     insert into list_members (list_id, contact_id) select $3, id from made`,
    [projectId, recipients, list.id],
  );
  await db.query('vacuum analyze contacts');
  await db.query('vacuum analyze list_members');
  const campaign = await call('POST', '/v1/campaigns', {
    name: 'Through the bulk route',
    from: `Bench News <news@${DOMAIN}>`,
    subject: 'Your weekly digest, {{ contact.first_name }}',
    html: `<p>Hello {{ contact.first_name }}</p><p>${'Words of a newsletter. '.repeat(30)}</p>`,
    list_ids: [list.id],
  });

  const tx: { id: string; answeredAt: number }[] = [];
  let txErrors = 0;
  let seq = 0;
  const sendTx = async () => {
    const i = seq++;
    const res = await json(`${server.url}/v1/emails`, 'POST', key, {
      from: `Bench <alerts@${DOMAIN}>`,
      to: `user${i}@transactional.example`,
      subject: `Your sign-in code ${i}`,
      text: `Your code is ${100000 + i}.`,
    });
    if (res.status === 200) tx.push({ id: res.body.id, answeredAt: performance.now() });
    else txErrors++;
  };
  const sendStart = performance.now();
  await call('POST', `/v1/campaigns/${campaign.id}/send`);
  const txTimer = setInterval(() => void sendTx().catch(() => txErrors++), 1000 / txPerSecond);
  // bounded: at the route's rate plus two minutes, then it stops
  const deadline = Date.now() + (recipients / routeRate + 120) * 1000;
  while (bulkSink.arrivals.size < recipients && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 250));
  clearInterval(txTimer);
  const drainSeconds = (performance.now() - sendStart) / 1000;
  const txDeadline = Date.now() + 30_000;
  const messageId = (id: string) => `<${id}@${DOMAIN}>`;
  while (tx.some((t) => !txSink.arrivals.has(messageId(t.id))) && Date.now() < txDeadline)
    await new Promise((r) => setTimeout(r, 100));

  const bulkTimes = [...bulkSink.arrivals.values()].sort((a, b) => a - b);
  const lo = percentile(bulkTimes, 5);
  const hi = percentile(bulkTimes, 95);
  const steadyCount = bulkTimes.filter((t) => t >= lo && t <= hi).length;
  const steadyRate = steadyCount / ((hi - lo) / 1000);
  const perSecond = new Map<number, number>();
  for (const t of bulkTimes)
    perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
  const busiest = Math.max(...perSecond.values());
  // how the steady part's seconds spread: an even rate below the limit (slots left empty) or dips (stalls)
  const steadySeconds = [...perSecond.entries()]
    .filter(([s]) => s * 1000 >= lo && (s + 1) * 1000 <= hi)
    .map(([, n]) => n)
    .sort((a, b) => a - b);
  const latencies = tx
    .map((t) => (txSink.arrivals.get(messageId(t.id)) ?? Number.NaN) - t.answeredAt)
    .filter((x) => !Number.isNaN(x))
    .sort((a, b) => a - b);
  const within = Math.abs(steadyRate - routeRate) / routeRate <= 0.05;
  const p99 = percentile(latencies, 99);

  console.log(
    `Routes benchmark, ${machine()}; api and worker as two processes (worker concurrency ${concurrency}), embedded PostgreSQL`,
  );
  console.log(
    `(1) campaign of ${recipients.toLocaleString('en')} through route "bulk" limited to ${routeRate}/s: ${bulkSink.arrivals.size.toLocaleString('en')} arrived in ${drainSeconds.toFixed(1)} s; steady rate (5th-95th percentile arrivals) ${steadyRate.toFixed(1)}/s = ${((steadyRate / routeRate) * 100).toFixed(1)} % of the limit`,
  );
  console.log(
    `(2) transactional at ${txPerSecond}/s through route "transactional": ${tx.length} sent (${txErrors} errors), ${latencies.length} arrived; answer -> sink ms p50 ${ms(percentile(latencies, 50))} p99 ${ms(p99)} max ${ms(latencies[latencies.length - 1] ?? Number.NaN)}`,
  );
  console.log(
    `(3) busiest second of the campaign at the sink: ${busiest} messages; the steady part's whole seconds: min ${steadySeconds[0]}, p10 ${percentile(steadySeconds, 10)}, median ${percentile(steadySeconds, 50)}, p90 ${percentile(steadySeconds, 90)}`,
  );
  console.log(
    `targets: campaign rate within 5 % of its limit ${within ? 'met' : 'NOT met'}; transactional p99 < 2 s ${p99 < 2000 ? 'met' : 'NOT met'}; every transactional message arrived ${latencies.length === tx.length ? 'yes' : 'NO'}`,
  );
  await db.end();
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
