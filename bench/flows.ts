// Flows on this machine (issue 17's targets), with the API, the worker (a separate process),
// embedded PostgreSQL, this process's SMTP sink and the load generator all on the same cores:
//   (2) first, on a quiet system: a flow triggered by the event `purchase` with one send step;
//       POST /v1/events at 1,000 a second for 10 s, each for a distinct existing contact, paced
//       with bounded concurrency; for each event, from its HTTP answer to its triggered message
//       being queued (the `emails` row written), p50 / p99 / max, split at the enrollment's
//       creation (the outbox and audience_event hops before it, the engine after it)
//   (1) then 1,000,000 enrollments (BENCH_ENROLLMENTS) of a flow [wait, send], asleep at the wait
//       as the engine leaves them (step_id = the wait, waiting_for {kind: 'wait', until}), whose
//       waits all end at one moment T a little ahead, with the `flow_advance` job the engine
//       schedules at T; from T until no enrollment is due (polled every 500 ms): enrollments
//       advanced per second, the lateness of the last, the messages queued (one per enrollment,
//       guarded by flow_step_sends), the engine's batches (one transaction each: their start
//       times are the `created_at` of their emails), the worker's RSS and each process's CPU.
//       Delivery of the messages (to a lean sink) goes on meanwhile and is NOT waited for.
// Contacts and the million enrollments are made set-based in SQL (generate_series); that setup is
// printed, not measured. Times compared across processes are read from the one system clock
// (PostgreSQL's `now()` and this process's wall clock, whose offset is measured and removed).
// Everything talks to 127.0.0.1 only, and every wait is bounded (BENCH_MAX_SECONDS in all).
// Run: node bench/flows.ts   (BENCH_ENROLLMENTS, BENCH_EVENTS_PER_SECOND, BENCH_EVENT_SECONDS,
// BENCH_LEAD_SECONDS, BENCH_WORKER_CONCURRENCY, BENCH_MAX_SECONDS to change it; BENCH_CPU_PROF=<dir> writes
// the worker's CPU profile there, BENCH_TRACE=1 prints each queue sample of (2) to stderr)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { guardBench, json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const enrollments = Number(process.env.BENCH_ENROLLMENTS ?? 1_000_000);
const eventsPerSecond = Number(process.env.BENCH_EVENTS_PER_SECOND ?? 1000);
const eventSeconds = Number(process.env.BENCH_EVENT_SECONDS ?? 10);
const maxSeconds = Number(process.env.BENCH_MAX_SECONDS ?? 2400);
const cpuProfDir = process.env.BENCH_CPU_PROF ?? null;
const DOMAIN = 'bench.example';
const SECRET = 'bench-flows-secret-0123456789abcdefghijkl';
const ADDRESS = 'Posthorn Bench Ltd, 2 High Street, Leeds LS1 1AA';
const FROM = `Bench <news@${DOMAIN}>`;
const MAX_IN_FLIGHT = 256;
const root = path.resolve(import.meta.dirname, '..');

/** This process's wall clock in ms, sub-millisecond. */
const wall = () => performance.timeOrigin + performance.now();
const s = (seconds: number) => `${seconds.toFixed(1)} s`;
const n = (x: number) => x.toLocaleString('en');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const dist = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(0);
  return `p50 ${f(percentile(sorted, 50))} p99 ${f(percentile(sorted, 99))} max ${f(sorted.at(-1) ?? Number.NaN)}`;
};

/** The worker role as its own process, as `npm start` runs it (bin/posthorn.js, its Node flags), and a CPU profile when asked. */
function startWorker(databaseUrl: string, apiPort: string, relay: string, dataDir: string): ChildProcess {
  const start: string = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const nodeFlags = start.split(' ').filter((a) => a.startsWith('--'));
  if (cpuProfDir) nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`);
  return spawn(process.execPath, [...nodeFlags, 'bin/posthorn.js', 'worker'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      POSTHORN_DATA_DIR: dataDir,
      POSTHORN_SECRET: SECRET,
      POSTHORN_SMTP_RELAY: relay,
      ...(process.env.BENCH_WORKER_CONCURRENCY
        ? { POSTHORN_WORKER_CONCURRENCY: process.env.BENCH_WORKER_CONCURRENCY }
        : {}),
      PORT: apiPort, // links in messages point at the API's public URL
      // domains verified in the database have no DNS for the bulk-sender gate to judge
      POSTHORN_BULK_GATE: 'off',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

async function stopChild(child: ChildProcess | null) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(30_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** RSS of a process in MB, from /proc (null once it is gone). */
function rssMb(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU seconds used so far by this process's descendants, by role: bench, api, worker, postgres. */
function cpuByRole(workerPid: number): Map<number, { role: string; seconds: number }> {
  const procs = new Map<number, { ppid: number; seconds: number; cmd: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      procs.set(Number(entry), {
        ppid: Number(fields[1]),
        seconds: (Number(fields[11]) + Number(fields[12])) / 100,
        cmd,
      });
    } catch {
      // gone meanwhile
    }
  }
  // the role is that of the ancestor this process started (the API owns the embedded PostgreSQL)
  const roleOf = (pid: number): string | null => {
    if (pid === process.pid) return 'bench';
    let top = pid;
    while (procs.get(top) && procs.get(top)?.ppid !== process.pid) top = procs.get(top)?.ppid ?? 0;
    if (!procs.get(top)) return null;
    if (top === workerPid) return 'worker';
    if (!procs.get(top)?.cmd.includes(' api')) return 'other';
    return pid === top ? 'api' : 'postgres';
  };
  const out = new Map<number, { role: string; seconds: number }>();
  for (const [pid, p] of procs) {
    const role = roleOf(pid);
    if (role) out.set(pid, { role, seconds: p.seconds });
  }
  return out;
}

/** CPU seconds each role used between two readings of cpuByRole: "role secs (share of wall)", and their sum. */
function cpuShares(before: ReturnType<typeof cpuByRole>, after: ReturnType<typeof cpuByRole>, wallS: number) {
  const sums = new Map<string, number>();
  for (const [pid, p] of after)
    sums.set(p.role, (sums.get(p.role) ?? 0) + p.seconds - (before.get(pid)?.seconds ?? 0));
  const text = [...sums]
    .sort((a, b) => b[1] - a[1])
    .map(([role, secs]) => `${role} ${secs.toFixed(1)} (${((100 * secs) / wallS).toFixed(0)}%)`)
    .join(', ');
  return { text, total: [...sums.values()].reduce((a, b) => a + b, 0) };
}

/** CPU seconds the whole machine has spent busy (all cores), from /proc/stat. */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return (ticks.slice(0, 8).reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) / 100;
}

/** PostgreSQL's clock minus this process's wall clock, in ms, from the quickest of 10 round trips. */
async function dbClockOffset(db: pg.Client): Promise<{ offset: number; rtt: number }> {
  let best = { offset: 0, rtt: Number.POSITIVE_INFINITY };
  for (let i = 0; i < 10; i++) {
    const t0 = wall();
    const { rows } = await db.query('select extract(epoch from clock_timestamp()) * 1000 as ms');
    const t1 = wall();
    if (t1 - t0 < best.rtt) best = { offset: Number(rows[0].ms) - (t0 + t1) / 2, rtt: t1 - t0 };
  }
  return best;
}

/** Contacts made in SQL: user<g>@<host>, first name <prefix><g>, subscribed (the default). */
async function addContacts(db: pg.Client, projectId: string, count: number, host: string, prefix: string) {
  await db.query(
    `insert into contacts (project_id, email, first_name, last_name)
     select $1, 'user' || g || '@' || $3::text, $4::text || g, 'Bench' from generate_series(1, $2::int) g`,
    [projectId, count, host, prefix],
  );
}

interface Answer {
  email: string;
  status: number;
  /** The answer's arrival, this process's wall clock (ms). */
  answeredAt: number;
  ms: number;
}

/**
 * POST /v1/events at `rate` a second for `seconds` seconds, each for the next contact of `email(i)`:
 * every 5 ms, as many requests start as the schedule says are due, with at most MAX_IN_FLIGHT
 * unanswered (a request that cannot start then starts as soon as one is answered).
 */
function paceEvents(url: string, key: string, rate: number, seconds: number, email: (i: number) => string) {
  const total = rate * seconds;
  const answers: Answer[] = [];
  let sent = 0;
  let inFlight = 0;
  let errors = 0;
  const start = performance.now();
  return new Promise<{ answers: Answer[]; errors: number; seconds: number }>((resolve) => {
    const finish = () => {
      if (sent >= total && inFlight === 0) {
        clearInterval(timer);
        resolve({ answers, errors, seconds: (performance.now() - start) / 1000 });
      }
    };
    const fire = (i: number) => {
      inFlight++;
      const t0 = performance.now();
      const to = email(i);
      fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          email: to,
          event: 'purchase',
          properties: { sku: 'A-1' },
          value: 19.9,
          currency: 'EUR',
        }),
      })
        .then(async (res) => {
          await res.arrayBuffer();
          answers.push({ email: to, status: res.status, answeredAt: wall(), ms: performance.now() - t0 });
        })
        .catch(() => errors++)
        .finally(() => {
          inFlight--;
          tick();
          finish();
        });
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
      while (sent < due && inFlight < MAX_IN_FLIGHT) fire(sent++);
    };
    const timer = setInterval(tick, 5);
  });
}

/** POST a flow and activate it; returns the active flow object. */
async function activeFlow(call: (m: string, u: string, b?: unknown) => Promise<any>, body: unknown) {
  const created = await call('POST', '/v1/flows', body);
  return call('POST', `/v1/flows/${created.id}/activate`);
}

/** Waits (bounded) until `sql` (one count) reaches `want`; returns the last count. */
async function waitForCount(db: pg.Client, sql: string, params: unknown[], want: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let count = 0;
  for (;;) {
    count = Number((await db.query(sql, params)).rows[0].count);
    if (count >= want || Date.now() > deadline) return count;
    await sleep(250);
  }
}

/**
 * Samples graphile-worker's queue and the flow's due enrollments every 250 ms (to see where the
 * time of (2) goes): deliveries waiting for a slot, how long a due `flow_advance` has waited
 * unstarted, and whether enrollments were due while the only `flow_advance` was set for later.
 */
function sampleQueue(db: pg.Client, flowId: string) {
  const state = { samples: 0, deliverMax: 0, advanceWaitMax: 0, dueWithAdvanceLater: 0, dueMax: 0 };
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await db.query(
        `select count(*) filter (where task_identifier = 'deliver_email' and locked_at is null and run_at <= now())::int as deliver,
                coalesce(max(extract(epoch from now() - run_at) * 1000) filter (
                  where task_identifier = 'flow_advance' and locked_at is null and run_at <= now()), 0)::float as advance_wait,
                count(*) filter (where task_identifier = 'flow_advance' and (locked_at is not null or run_at <= now()))::int as advance_now,
                count(*) filter (where task_identifier = 'flow_advance' and locked_at is null and run_at > now())::int as advance_later,
                (select count(*) from flow_enrollments where flow_id = $1 and status = 'active' and wake_at <= now())::int as due
           from graphile_worker.jobs`,
        [flowId],
      );
      const r = rows[0];
      if (process.env.BENCH_TRACE) console.error(`queue ${new Date().toISOString()} ${JSON.stringify(r)}`);
      state.samples++;
      state.deliverMax = Math.max(state.deliverMax, r.deliver);
      state.advanceWaitMax = Math.max(state.advanceWaitMax, r.advance_wait);
      state.dueMax = Math.max(state.dueMax, r.due);
      if (r.due > 0 && r.advance_now === 0 && r.advance_later > 0) state.dueWithAdvanceLater++;
    } catch {
      // a sample lost is not a figure lost
    } finally {
      busy = false;
    }
  }, 250);
  return { state, stop: () => clearInterval(timer) };
}

type Call = (method: string, url: string, body?: unknown) => Promise<any>;
interface Ctx {
  db: pg.Client;
  call: Call;
  key: string;
  projectId: string;
  clock: { offset: number; rtt: number };
}

/** Part (2): events at a fixed rate, each triggering a flow's message; answer-to-queued latencies. */
async function eventLatency({ db, call, key, clock }: Ctx) {
  const flow = await activeFlow(call, {
    name: 'On purchase',
    trigger: { type: 'event', event: 'purchase' },
    from: FROM,
    steps: [
      {
        type: 'send',
        subject: 'Thanks, {{ contact.first_name }}',
        html: '<p>Thank you for your order, {{ contact.first_name }}.</p>',
      },
    ],
  });
  const url = `${server.url}/v1/events`;
  const queue = sampleQueue(db, flow.id);
  const run = await paceEvents(url, key, eventsPerSecond, eventSeconds, (i) => `user${i + 1}@buyers.example`);
  const accepted = run.answers.filter((a) => a.status >= 200 && a.status < 300);
  const written = await waitForCount(
    db,
    'select count(*) from emails where flow_id = $1',
    [flow.id],
    accepted.length,
    120_000,
  );
  queue.stop();
  const batches = batchSummary((await engineFacts(db, flow.id, new Date())).batches);
  const { rows } = await db.query(
    `select c.email, extract(epoch from en.created_at) * 1000 as enrolled, extract(epoch from e.created_at) * 1000 as queued
       from emails e join contacts c on c.id = e.contact_id
       left join flow_enrollments en on en.flow_id = e.flow_id and en.contact_id = e.contact_id
      where e.flow_id = $1`,
    [flow.id],
  );
  const byEmail = new Map(
    rows.map((r) => [r.email as string, { enrolled: Number(r.enrolled), queued: Number(r.queued) }]),
  );
  const total: number[] = [];
  const toEnrolled: number[] = [];
  const toQueued: number[] = [];
  // the slowest message of each second of events tells a stall (one burst) from a slow path (every second)
  const slowestBySecond: number[] = [];
  const firstAnswer = Math.min(...accepted.map((a) => a.answeredAt));
  for (const a of accepted) {
    const row = byEmail.get(a.email);
    if (!row) continue;
    const answered = a.answeredAt + clock.offset; // in the database's clock
    total.push(row.queued - answered);
    const second = Math.floor((a.answeredAt - firstAnswer) / 1000);
    slowestBySecond[second] = Math.max(slowestBySecond[second] ?? 0, row.queued - answered);
    toEnrolled.push(row.enrolled - answered);
    toQueued.push(row.queued - row.enrolled);
  }
  const p99 = percentile(
    [...total].sort((a, b) => a - b),
    99,
  );
  console.log(
    `(2) POST /v1/events at ${eventsPerSecond}/s for ${eventSeconds} s, one event per distinct contact: ${n(run.answers.length)} answered in ${s(run.seconds)} (${(run.answers.length / run.seconds).toFixed(0)}/s), ${n(accepted.length)} accepted, ${run.errors} network errors; request ms ${dist(run.answers.map((a) => a.ms))}`,
  );
  console.log(
    `    triggered messages queued ${n(written)} of ${n(accepted.length)}; answer -> email row written ms ${dist(total)}`,
  );
  console.log(
    `    answer -> email row, the slowest of each second of events, ms: ${Array.from(slowestBySecond, (ms) => (ms === undefined ? '-' : Math.round(ms))).join(' ')}`,
  );
  console.log(
    `    of which answer -> enrollment created ms ${dist(toEnrolled)}; enrollment -> email row ms ${dist(toQueued)} (row times are their transactions' starts)`,
  );
  const q = queue.state;
  console.log(
    `    engine: ${batches.count} batches, size ${batches.sizes}, ms between batch starts ${batches.gaps}; queue every 250 ms (${q.samples} samples): due enrollments max ${q.dueMax}, samples with enrollments due while flow_advance was set for later ${q.dueWithAdvanceLater}, a due flow_advance waited for a slot up to ${q.advanceWaitMax.toFixed(0)} ms, deliver_email jobs waiting max ${q.deliverMax}`,
  );
  return {
    ok: written >= accepted.length && accepted.length === run.answers.length && run.errors === 0,
    p99,
  };
}

/** Part (1), setup: the [wait, send] flow and its million sleeping enrollments, due at T. */
async function sleepingEnrollments({ db, call, projectId }: Ctx, leadSeconds: number) {
  const flow = await activeFlow(call, {
    name: 'A million waits',
    trigger: { type: 'manual' },
    from: FROM,
    steps: [
      { type: 'wait', duration_seconds: 3600 },
      {
        type: 'send',
        subject: 'Hi {{ contact.first_name }}',
        html: '<p>Hello {{ contact.first_name }}, here is what is new this week.</p>',
      },
    ],
  });
  const waitStep: string = flow.steps[0].id;
  const at: Date = (await db.query('select now() + make_interval(secs => $1) as t', [leadSeconds])).rows[0].t;
  const started = performance.now();
  await db.query(
    `insert into flow_enrollments (id, project_id, flow_id, version, contact_id, status, step_id, wake_at, waiting_for)
     select gen_random_uuid(), $1, $2, $3, c.id, 'active', $4, $5::timestamptz, jsonb_build_object('kind', 'wait', 'until', $6::text)
       from contacts c where c.project_id = $1 and c.email like '%@audience.example'`,
    [projectId, flow.id, flow.version, waitStep, at, at.toISOString()],
  );
  await db.query('vacuum analyze flow_enrollments');
  // what the engine's last batch did when they fell asleep: the next advance at the earliest wake_at
  await db.query(
    `select graphile_worker.add_job('flow_advance', '{}'::json, run_at => $1, job_key => 'flow-advance', priority => 10)`,
    [at],
  );
  return { flow, at, setupSeconds: (performance.now() - started) / 1000 };
}

/** Polls every 500 ms from T until no enrollment of the flow is due (bounded); returns the DB time then. */
async function untilNoneDue(db: pg.Client, flowId: string, at: Date, timeoutMs: number) {
  const deadline = at.getTime() + timeoutMs;
  for (;;) {
    const { rows } = await db.query(
      `select clock_timestamp() as now, exists (select 1 from flow_enrollments
          where flow_id = $1 and status = 'active' and wake_at <= now()) as due`,
      [flowId],
    );
    const now: Date = rows[0].now;
    if (now > at && !rows[0].due) return { doneAt: now, complete: true };
    if (now.getTime() > deadline) return { doneAt: now, complete: false };
    await sleep(500);
  }
}

/** What the engine wrote for the flow: enrollment statuses, guards, emails and its batches. */
async function engineFacts(db: pg.Client, flowId: string, at: Date) {
  const statuses = (
    await db.query(
      'select status, count(*)::int as c from flow_enrollments where flow_id = $1 group by status',
      [flowId],
    )
  ).rows.map((r) => `${r.status} ${n(r.c)}`);
  const guards = Number(
    (
      await db.query(
        'select count(*) from flow_step_sends g join flow_enrollments e on e.id = g.enrollment_id where e.flow_id = $1',
        [flowId],
      )
    ).rows[0].count,
  );
  const emails = (
    await db.query(
      'select count(*)::int as c, count(distinct contact_id)::int as contacts from emails where flow_id = $1',
      [flowId],
    )
  ).rows[0];
  // each batch is one transaction: its emails share its start time
  const batches = (
    await db.query(
      `select extract(epoch from created_at - $2::timestamptz) * 1000 as ms, count(*)::int as c
         from emails where flow_id = $1 group by created_at order by created_at`,
      [flowId, at],
    )
  ).rows.map((r) => ({ ms: Number(r.ms), size: r.c as number }));
  return { statuses, guards, emails, batches };
}

/** Per-10-second rates of messages queued, and the gaps between batch starts. */
function batchSummary(batches: { ms: number; size: number }[]) {
  const per10 = new Map<number, number>();
  for (const b of batches)
    per10.set(Math.floor(b.ms / 10_000), (per10.get(Math.floor(b.ms / 10_000)) ?? 0) + b.size);
  const gaps = batches.slice(1).map((b, i) => b.ms - batches[i].ms);
  return {
    rates: [...per10].map(([k, c]) => `${k * 10}s:${(c / 10).toFixed(0)}`).join(' '),
    gaps: dist(gaps),
    sizes: dist(batches.map((b) => b.size)),
    count: batches.length,
    first: batches[0]?.ms ?? Number.NaN,
    last: batches.at(-1)?.ms ?? Number.NaN,
  };
}

/**
 * With BENCH_TRACE: samples what PostgreSQL's sessions are doing every 50 ms (a sampling profile of
 * the database side: each active statement, and each session idle in a transaction, by its last
 * statement: there it waits for its Node process), from a connection of its own.
 */
async function sampleSessions(url: string) {
  if (!process.env.BENCH_TRACE) return null;
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  const counts = new Map<string, number>();
  let samples = 0;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await client.query(
        `select state, coalesce(wait_event_type || ':' || wait_event, 'cpu') as wait,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as q
           from pg_stat_activity
          where pid <> pg_backend_pid() and backend_type = 'client backend' and state <> 'idle'`,
      );
      samples++;
      for (const r of rows) {
        const key = `${r.state === 'active' ? `active ${r.wait}` : r.state} | ${r.q}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    } catch {
      // a sample lost
    } finally {
      busy = false;
    }
  }, 50);
  return {
    async stop() {
      clearInterval(timer);
      await client.end().catch(() => {});
      const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 15);
      console.log(
        `    database sessions, ${samples} samples every 50 ms (share of samples: session state | statement):`,
      );
      for (const [key, c] of top) console.log(`      ${((100 * c) / samples).toFixed(0)}% ${key}`);
    },
  };
}

/** Part (1): the million waits ending at T, advanced by the worker; figures printed. */
async function millionWaits(ctx: Ctx, workerPid: number, leadSeconds: number) {
  const { db } = ctx;
  const { flow, at, setupSeconds } = await sleepingEnrollments(ctx, leadSeconds);
  const ahead = at.getTime() - (wall() + ctx.clock.offset);
  if (ahead < 2000)
    throw new Error(`the enrollments' setup overran T by ${s(-ahead / 1000)}: raise BENCH_LEAD_SECONDS`);
  console.log(
    `(1) setup (not measured): ${n(enrollments)} enrollments asleep at the wait, inserted and vacuumed in ${s(setupSeconds)}; T ${s(ahead / 1000)} ahead`,
  );
  await sleep(ahead - 1000);
  const idleRss = rssMb(workerPid) ?? 0;
  const rss: number[] = [];
  const sessions = await sampleSessions(server.databaseUrl());
  const sampler = setInterval(() => {
    const mb = rssMb(workerPid);
    if (mb !== null) rss.push(mb);
  }, 500);
  const cpuBefore = cpuByRole(workerPid);
  const busyBefore = machineBusySeconds();
  const sinkBefore = sink.count;
  const timeoutMs = Math.max(120_000, (enrollments / 5000) * 4 * 1000);
  const { doneAt, complete } = await untilNoneDue(db, flow.id, at, timeoutMs);
  clearInterval(sampler);
  await sessions?.stop();
  const wallS = (doneAt.getTime() - at.getTime()) / 1000 + 1;
  const cpu = cpuShares(cpuBefore, cpuByRole(workerPid), wallS);
  const busy = machineBusySeconds() - busyBefore;
  const delivered = sink.count - sinkBefore;
  const facts = await engineFacts(db, flow.id, at);
  const summary = batchSummary(facts.batches);
  const late = (doneAt.getTime() - at.getTime()) / 1000;
  const rate = facts.emails.c / late;
  const maxRss = Math.max(0, ...rss);
  console.log(
    `    from T until none due (polled every 500 ms): ${s(late)}${complete ? '' : ' (INCOMPLETE: stopped waiting)'}: ${n(Math.round(rate))} enrollments/s; last batch began ${s(summary.last / 1000)} after T, the first ${(summary.first).toFixed(0)} ms after T`,
  );
  console.log(
    `    enrollments: ${facts.statuses.join(', ')}; flow_step_sends ${n(facts.guards)}; emails queued ${n(facts.emails.c)} for ${n(facts.emails.contacts)} distinct contacts`,
  );
  console.log(
    `    batches (one transaction each): ${n(facts.batches.length)}; size ${summary.sizes}; ms between batch starts ${summary.gaps}`,
  );
  console.log(`    messages queued per second, by 10 s from T: ${summary.rates}`);
  console.log(
    `    delivered to the sink meanwhile: ${n(delivered)} (delivery lags and is not part of the figure); worker RSS idle ${idleRss.toFixed(0)} MB, max ${maxRss.toFixed(0)} MB (${rss.length} samples)`,
  );
  console.log(
    `    CPU from T, seconds (share of ${s(wallS)} wall): ${cpu.text}; outside the bench ${Math.max(0, busy - cpu.total).toFixed(1)}`,
  );
  return {
    ok:
      complete &&
      facts.emails.c === enrollments &&
      facts.guards === enrollments &&
      facts.emails.contacts === enrollments,
    rate,
    late,
  };
}

const sink = await startBenchSink();
const server = await startBenchServer({ POSTHORN_SMTP_RELAY: sink.url, POSTHORN_SECRET: SECRET }, ['api']);
const workerDir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-worker-'));
let worker: ChildProcess | null = null;
// on the way out, and after BENCH_MAX_SECONDS or a signal: the processes stopped, the files gone
const guard = guardBench('bench:flows', maxSeconds, async () => {
  await stopChild(worker);
  await server.stop();
  await sink.close();
  rmSync(workerDir, { recursive: true, force: true });
});

let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server);
  db.on('error', () => {}); // the database stops with the server, on the way out
  const call: Call = async (method, url, body) => {
    const res = await json(`${server.url}${url}`, method, key, body);
    if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  // a sending domain with its own DKIM key, verified here (no DNS; not due for a re-check), and the footer
  const domain = await call('POST', '/v1/domains', { domain: DOMAIN });
  await db.query(
    `update domains set status = 'verified', verified_at = now(), last_checked_at = now() where id = $1`,
    [domain.id],
  );
  await call('PATCH', '/v1/me/footer', { address: ADDRESS });

  const setupStart = performance.now();
  await addContacts(db, projectId, eventsPerSecond * eventSeconds, 'buyers.example', 'Buyer');
  await addContacts(db, projectId, enrollments, 'audience.example', 'Reader');
  await db.query('vacuum analyze contacts');
  const setupSeconds = (performance.now() - setupStart) / 1000;
  // the enrollments' insert (and vacuum) took 2.5 to 7 times as long as the contacts' (the most on a
  // loaded machine): T leaves room for it, as the worker must be idle at T
  const leadSeconds = Number(process.env.BENCH_LEAD_SECONDS ?? Math.ceil(60 + 6 * setupSeconds));

  worker = startWorker(server.databaseUrl(), new URL(server.url).port, sink.url, workerDir);
  await sleep(3000); // no port to poll: give it time to connect
  if (worker.exitCode !== null) throw new Error('the worker exited at start');
  const clock = await dbClockOffset(db);
  const ctx: Ctx = { db, call, key, projectId, clock };

  console.log(`Flows benchmark, ${machine()}; api and worker as two processes, embedded PostgreSQL`);
  console.log(
    `setup (not measured): ${n(enrollments + eventsPerSecond * eventSeconds)} contacts in SQL, vacuumed, in ${s(setupSeconds)}; database clock - bench clock ${clock.offset.toFixed(1)} ms (round trip ${clock.rtt.toFixed(1)} ms)`,
  );
  const events = await eventLatency(ctx);
  const waits = await millionWaits(ctx, worker.pid as number, leadSeconds);
  await db.end();
  console.log(
    `targets: >= 5,000 enrollments/s (last <= ${s(enrollments / 5000)} late) ${waits.rate >= 5000 ? 'met' : 'NOT met'}; events -> queued p99 < 1 s ${events.p99 < 1000 ? 'met' : 'NOT met'}`,
  );
  failed = !events.ok || !waits.ok;
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
