// Audience figures on this machine, with Posthorn (npm start, one process), PostgreSQL and the load
// generator together:
//   (1) time to import 1,000,000 contacts from a CSV file through POST /v1/contacts/import
//   (2) POST /v1/events ingested per second: one event per request, and arrays of 100 (run last,
//       into the 10,000,000 events of (3))
//   (3) count latency of three typical segments over 1,000,000 contacts and 10,000,000 events
// Run: node bench/audience.ts   (BENCH_CONTACTS, BENCH_EVENTS_PER_CONTACT, BENCH_SECONDS to change it)
import { load } from './load.ts';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';

const contacts = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const eventsPerContact = Number(process.env.BENCH_EVENTS_PER_CONTACT ?? 10);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);

const server = await startBenchServer({ POSTHORN_WORKER_CONCURRENCY: '4' }, ['start']);
let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server);
  const auth = { authorization: `Bearer ${key}` };

  // (1) import
  const plans = ['free', 'pro', 'team', 'enterprise'];
  const cities = ['Paris', 'Berlin', 'Lisbon', 'Oslo', 'Rome', 'Leeds'];
  const lines = ['email,first_name,last_name,plan,city,seats'];
  for (let i = 0; i < contacts; i++) {
    lines.push(
      `user${i}@example${i % 97}.com,First${i % 500},Last${i % 800},${plans[i % 4]},${cities[i % 6]},${i % 50}`,
    );
  }
  const csv = lines.join('\n');
  const importStart = performance.now();
  const res = await fetch(`${server.url}/v1/contacts/import`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'text/csv' },
    body: csv,
  });
  const started = (await res.json()) as { id: string };
  if (res.status !== 200) throw new Error(`import refused: ${JSON.stringify(started)}`);
  let state: { status: string; created: number; error_count: number; processed: number };
  for (;;) {
    state = (await json(`${server.url}/v1/imports/${started.id}`, 'GET', key)).body;
    if (state.status === 'completed' || state.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const importSeconds = (performance.now() - importStart) / 1000;

  // (3) segments over the imported contacts and 10 events each (generated in SQL, a year of history),
  // measured before (2) adds its events, so the data is exactly 1,000,000 contacts and 10,000,000 events
  const genStart = performance.now();
  // generated without the secondary indexes, which are then rebuilt exactly as the migrations define them
  const indexes = (
    await db.query(
      `select indexname, indexdef from pg_indexes where tablename = 'events' and indexname <> 'events_pkey'`,
    )
  ).rows as { indexname: string; indexdef: string }[];
  for (const i of indexes) await db.query(`drop index ${i.indexname}`);
  await db.query(
    // each event's name drawn at random (a fifth are purchases with a value in EUR), its time
    // anywhere in the last year
    `insert into events (project_id, contact_id, name, properties, value, currency, created_at)
     select $1, n.id, n.name,
            case when n.name = 'purchase' then jsonb_build_object('sku', 'SKU-' || (n.g % 20)) else '{}' end,
            case when n.name = 'purchase' then round((random() * 200)::numeric, 2) end,
            case when n.name = 'purchase' then 'EUR' end,
            now() - random() * interval '365 days'
       from (select c.id, g, (array['purchase', 'login', 'page_view', 'email_open', 'signup'])[1 + floor(random() * 5)::int] as name
               from contacts c cross join generate_series(1, $2) g
              where c.project_id = $1) n`,
    [projectId, eventsPerContact],
  );
  for (const i of indexes) await db.query(i.indexdef);
  await db.query('vacuum analyze events');
  await db.query('vacuum analyze contacts');
  const totalEvents = Number((await db.query('select count(*) from events')).rows[0].count);
  const genSeconds = (performance.now() - genStart) / 1000;
  const list = await json(`${server.url}/v1/lists`, 'POST', key, { name: 'VIP' });
  await db.query(
    `insert into list_members (list_id, contact_id) select $1, id from contacts where project_id = $2 and email like 'user%7@%'`,
    [list.body.id, projectId],
  );
  await db.query('analyze list_members');
  // typical segments (the targets), then a heavier one: a revenue sum over every purchase of 90 days
  const segments = {
    'pro plan, subscribed': {
      all: [
        { field: 'properties.plan', op: 'equals', value: 'pro' },
        { field: 'subscribed', op: 'equals', value: true },
      ],
    },
    'purchased 3+ times in 30 days': { all: [{ event: 'purchase', count: { gte: 3 }, within_days: 30 }] },
    'purchased 2+ times in 90 days (repeat buyers)': {
      all: [{ event: 'purchase', count: { gte: 2 }, within_days: 90 }],
    },
    'spent 150+ EUR on purchases in 30 days, or in the VIP list': {
      any: [
        { revenue: { gte: 150 }, currency: 'EUR', event: 'purchase', within_days: 30 },
        { list: list.body.id, op: 'member' },
      ],
    },
    '(heavier) EUR revenue >= 500 in 90 days': {
      all: [{ revenue: { gte: 500 }, currency: 'EUR', within_days: 90 }],
    },
  };
  const latencies: string[] = [];
  for (const [name, definition] of Object.entries(segments)) {
    const seg = await json(`${server.url}/v1/segments`, 'POST', key, { name, definition });
    if (seg.status !== 200) throw new Error(`segment refused: ${JSON.stringify(seg.body)}`);
    const times: number[] = [];
    let count = 0;
    for (let i = 0; i < 11; i++) {
      const t = performance.now();
      const r = await json(`${server.url}/v1/segments/${seg.body.id}/count`, 'GET', key);
      times.push(performance.now() - t);
      count = r.body.count;
    }
    times.sort((a, b) => a - b);
    latencies.push(
      `    ${name}: ${count.toLocaleString('en')} contacts; count latency p50 ${times[5].toFixed(0)} ms, max ${times[10].toFixed(0)} ms (11 runs)`,
    );
  }
  // (2) events: one per request, then arrays of 100 (into the 10,000,000 events of (3))
  const event = (i: number | string) => ({
    email: `user${i}@example1.com`,
    event: 'purchase',
    properties: { sku: 'A-1' },
    value: 19.9,
    currency: 'EUR',
    quantity: 1,
  });
  const headers = { ...auth, 'content-type': 'application/json' };
  const post = (body: string, conns: number, secs: number) =>
    load({
      url: `${server.url}/v1/events`,
      method: 'POST',
      headers,
      body,
      connections: conns,
      seconds: secs,
    });
  await post(JSON.stringify(event(1)), 32, 2);
  const single = await post(JSON.stringify(event(1)), 32, seconds);
  const batch = await post(
    JSON.stringify(Array.from({ length: 100 }, (_, i) => event(i * 97 + 1))),
    8,
    seconds,
  );

  await db.end();

  console.log(`Audience benchmark, ${machine()}, one process (npm start)`);
  console.log(
    `(1) import of ${contacts.toLocaleString('en')} contacts from CSV (${(csv.length / 1048576).toFixed(0)} MB): ${state.status} in ${importSeconds.toFixed(1)} s (${Math.round(contacts / importSeconds).toLocaleString('en')} rows/s); created ${state.created.toLocaleString('en')}, errors ${state.error_count}`,
  );
  console.log(
    `(2) POST /v1/events, one event per request, 32 connections, ${seconds} s (${single.tool}): ${single.rps.toFixed(0)} events/s; latency ms p50 ${single.p50} p99 ${single.p99}; errors ${single.errors}`,
  );
  console.log(
    `    arrays of 100 events, 8 connections: ${(batch.rps * 100).toFixed(0)} events/s; request latency ms p50 ${batch.p50} p99 ${batch.p99}; errors ${batch.errors}`,
  );
  console.log(
    `(3) segments over ${contacts.toLocaleString('en')} contacts and ${totalEvents.toLocaleString('en')} events (generated in ${genSeconds.toFixed(0)} s):`,
  );
  for (const l of latencies) console.log(l);
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
