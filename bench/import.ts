// Contact import speed and memory (issue 48): a CSV file of 1,000,000 rows and six columns, as
// people have them (a byte-order mark, semicolons, headers such as "Email Address" and
// "First Name"), through POST /v1/contacts/import into a project with no contacts, followed by
// GET /v1/imports/{id} four times a second (the progress printed once a second), with Posthorn
// (npm start, one process), PostgreSQL and this script on the same machine. Target: >= 20,000 rows/s, with the
// server's peak memory (VmHWM) bounded.
// Prints the rate, the server's peak resident memory (VmHWM), how many distinct progress readings
// were seen before the end, and the load average before and after (the machine may be shared).
// Run: npm run bench:import   (BENCH_ROWS to change the size, BENCH_IMPORT_LIST=1 to add every
// contact to a list as well, BENCH_MAX_SECONDS for the watchdog, BENCH_SHOW_OUTPUT=1 to print the
// server's output at the end)
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { guardBench, json, machine, quietMachine, readyBenchAccount, startBenchServer } from './server.ts';

const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const withList = process.env.BENCH_IMPORT_LIST === '1';
const TARGET = 20_000;

/** A process's resident memory now and at its peak, in MB (Linux; null elsewhere). */
function memoryOf(pid: number): { rss: number; peak: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return null;
  }
}

function csvOf(count: number): Buffer {
  const plans = ['free', 'pro', 'team', 'enterprise'];
  const cities = ['Paris', 'Berlin', 'Lisbon', 'Oslo', 'Rome', 'Leeds'];
  const lines = ['Email Address;First Name;Last Name;Plan;City;Seats'];
  for (let i = 0; i < count; i++)
    lines.push(
      `user${i}@example${i % 97}.com;First${i % 500};Last${i % 800};${plans[i % 4]};${cities[i % 6]};${i % 50}`,
    );
  return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${lines.join('\n')}\n`)]);
}

const server = await startBenchServer({ POSTHORN_WORKER_CONCURRENCY: '4' }, ['start']);
const guard = guardBench('bench:import', Number(process.env.BENCH_MAX_SECONDS ?? 900), () => server.stop());
const pid = server.pids[0].pid;
let failed = false;
try {
  const { key, db } = await readyBenchAccount(server);
  let listQuery = '';
  if (withList) {
    const list = await json(`${server.url}/v1/lists`, 'POST', key, { name: 'Imported' });
    listQuery = `&list_ids=${list.body.id}`;
  }
  await db.end();
  const csv = csvOf(rows);
  console.log(`machine: ${machine()}`);
  console.log(`file: ${rows.toLocaleString('en')} rows, six columns, ${(csv.length / 1e6).toFixed(1)} MB`);
  const before = memoryOf(pid);
  await quietMachine();
  const loadBefore = loadavg().map((l) => l.toFixed(2));
  console.log(`load average before: ${loadBefore.join(' ')}`);

  const start = performance.now();
  const res = await fetch(`${server.url}/v1/contacts/import?filename=bench.csv${listQuery}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
    body: csv,
  });
  const started = (await res.json()) as { id: string };
  if (res.status !== 200) throw new Error(`import refused: ${JSON.stringify(started)}`);
  const uploaded = (performance.now() - start) / 1000;
  console.log(`uploaded and checked in ${uploaded.toFixed(1)} s; progress (GET /v1/imports/{id}):`);
  let state: {
    status: string;
    processed: number;
    created: number;
    error_count: number;
    failure: string | null;
  };
  let peakRss = 0;
  let printed = 0;
  // the distinct counts of processed rows read while the import ran (progress shown)
  const progressSeen = new Set<number>();
  // the server's memory once a tenth of the rows is in: what grows after it grows with the file
  let rssAtTenth: number | null = null;
  // polled four times a second (the end is seen within 250 ms), printed once a second
  for (;;) {
    await new Promise((r) => setTimeout(r, 250));
    const res = await json(`${server.url}/v1/imports/${started.id}`, 'GET', key);
    if (res.status !== 200)
      throw new Error(
        `GET /v1/imports/{id}: ${res.status} ${JSON.stringify(res.body)}\nthe server's output:\n${server.output().slice(-4000)}`,
      );
    state = res.body;
    const mem = memoryOf(pid);
    peakRss = Math.max(peakRss, mem?.rss ?? 0);
    const at = (performance.now() - start) / 1000;
    const done = state.status === 'completed' || state.status === 'failed';
    if (!done && state.processed > 0) progressSeen.add(state.processed);
    if (rssAtTenth === null && state.processed >= rows / 10) rssAtTenth = mem?.rss ?? null;
    if (done || at - printed >= 1) {
      printed = at;
      console.log(
        `  ${at.toFixed(0).padStart(4)} s  ${state.status.padEnd(9)} ${state.processed.toLocaleString('en').padStart(9)} rows  ${Math.round(state.processed / at).toLocaleString('en')} rows/s  server RSS ${mem?.rss ?? '?'} MB`,
      );
    }
    if (done) break;
  }
  const seconds = (performance.now() - start) / 1000;
  const rate = Math.round(state.processed / seconds);
  const after = memoryOf(pid);
  console.log(
    JSON.stringify(
      {
        rows,
        list: withList,
        status: state.status,
        failure: state.failure,
        created: state.created,
        errors: state.error_count,
        seconds: Number(seconds.toFixed(1)),
        rows_per_second: rate,
        server_rss_mb: {
          before: before?.rss ?? null,
          at_a_tenth: rssAtTenth,
          max_sampled: peakRss,
          peak_vmhwm: after?.peak ?? null,
        },
        progress_readings: progressSeen.size,
        load_average: { before: loadBefore, after: loadavg().map((l) => l.toFixed(2)) },
      },
      null,
      2,
    ),
  );
  console.log(
    `${rate.toLocaleString('en')} rows/s end to end (upload included): target >= ${TARGET.toLocaleString('en')} rows/s ${rate >= TARGET ? 'met' : 'NOT met'}`,
  );
  console.log(
    `server peak memory (VmHWM): ${after?.peak ?? '?'} MB (${before?.rss ?? '?'} MB before the upload, ${rssAtTenth ?? '?'} MB a tenth of the way); progress seen: ${progressSeen.size > 0 ? `yes, ${progressSeen.size} distinct readings before the end` : 'NO'}`,
  );
  if (process.env.BENCH_SHOW_OUTPUT) console.log(server.output());
  failed = state.status !== 'completed' || state.created !== rows || progressSeen.size === 0;
} catch (err) {
  console.error(err);
  failed = true;
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
