// Campaigns on this machine (issue 16's targets), with the API, the worker (a separate process),
// embedded PostgreSQL, this process's SMTP sink and the transactional client all on the same cores:
//   (1) POST /v1/campaigns/{id}/send over a 1,000,000-contact audience: its checks and the snapshot
//       (one INSERT ... SELECT), timed, for a topic (a tenth of the audience left it) at 09:00 in each
//       recipient's zone (BENCH_PLAIN_SNAPSHOT=1: neither); the campaign is then cancelled so that
//       nothing of it is sent.
//       The worker is started only after this, so not one message of that campaign is written.
//   (2) a campaign to a separate list of 100,000 contacts, delivered to the sink: Liquid
//       ({{ contact.first_name }} in subject and body), three tracked links and the open pixel, the
//       compliance footer, List-Unsubscribe and DKIM (a verified domain with its own key); from the
//       send call until the sink has every message
//   (3) during (2), 5 transactional POST /v1/emails a second: from the HTTP answer to the moment the
//       sink has the message, p50 / p99 / max
//   (4) during (2), the worker process's RSS every 500 ms, and the CPU each process used
//   (5) after (2), the campaign page's two reads (stats, activity over time), 10 times each
// Contacts and list memberships are made set-based in SQL (generate_series); that setup is printed,
// not measured. Everything talks to 127.0.0.1 only, and every wait is bounded.
// Run: node bench/campaign.ts   (BENCH_RECIPIENTS, BENCH_AUDIENCE, BENCH_TX_PER_SECOND,
// BENCH_WORKER_CONCURRENCY, BENCH_MAX_SECONDS to change it)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { guardBench, json, machine, readyBenchAccount, startBenchServer } from './server.ts';

const recipients = Number(process.env.BENCH_RECIPIENTS ?? 100_000);
const audience = Number(process.env.BENCH_AUDIENCE ?? 1_000_000);
const txPerSecond = Number(process.env.BENCH_TX_PER_SECOND ?? 5);
const concurrency = process.env.BENCH_WORKER_CONCURRENCY ?? '8';
const maxSeconds = Number(process.env.BENCH_MAX_SECONDS ?? 2400);
/** (1) as a plain campaign (BENCH_PLAIN_SNAPSHOT=1) instead of one for a topic at 09:00 local time. */
const plainSnapshot = process.env.BENCH_PLAIN_SNAPSHOT === '1';
const DOMAIN = 'bench.example';
const SECRET = 'bench-campaign-secret-0123456789abcdefghij';
const ADDRESS = 'Posthorn Bench Ltd, 2 High Street, Leeds LS1 1AA';
const root = path.resolve(import.meta.dirname, '..');

/**
 * A lean SMTP sink that notes when each message arrives (by Message-ID, in this process's clock),
 * counts marketing messages and those among them with a DKIM signature, and keeps the first
 * marketing message whole as a sample. Nothing else is parsed.
 */
async function startTimingSink() {
  const arrivals = new Map<string, number>();
  const state = { marketing: 0, signed: 0, sample: null as string | null };
  let waiter: { n: number; resolve: () => void } | null = null;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    maxClients: 200,
    onData(stream, _session, callback) {
      let head = '';
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        if (head.length < 8192) head += chunk.toString('latin1');
        if (state.sample === null) chunks.push(chunk);
      });
      stream.on('end', () => {
        const at = performance.now();
        const id = /^Message-ID:\s*(<[^>]+>)/im.exec(head)?.[1];
        if (id) arrivals.set(id, at);
        if (/^X-Posthorn-Stream:\s*marketing/im.test(head)) {
          state.marketing++;
          if (/^DKIM-Signature:/im.test(head)) state.signed++;
          if (state.sample === null) state.sample = Buffer.concat(chunks).toString('latin1');
          if (waiter && state.marketing >= waiter.n) waiter.resolve();
        }
        callback();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    arrivals,
    state,
    /** Resolves true once `n` marketing messages arrived, false after `timeoutMs`. */
    waitForMarketing(n: number, timeoutMs: number) {
      return new Promise<boolean>((resolve) => {
        if (state.marketing >= n) return resolve(true);
        const timer = setTimeout(() => resolve(false), timeoutMs);
        waiter = {
          n,
          resolve: () => {
            clearTimeout(timer);
            waiter = null;
            resolve(true);
          },
        };
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The worker role as its own process (as a deployment scales it), so its RSS is its own. */
function startWorker(databaseUrl: string, apiPort: string, relay: string, dataDir: string): ChildProcess {
  // as `npm start` runs Posthorn: bin/posthorn.js (Node's compile cache on) with the same Node flags
  const start: string = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const nodeFlags = start.split(' ').filter((a) => a.startsWith('--'));
  // BENCH_CPU_PROF=<dir>: the worker writes its threads' CPU profiles to <dir>/worker when it stops, as
  // bench/server.ts's processes do
  if (process.env.BENCH_CPU_PROF)
    nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${path.join(process.env.BENCH_CPU_PROF, 'worker')}`);
  const child = spawn(process.execPath, [...nodeFlags, 'bin/posthorn.js', 'worker'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      POSTHORN_DATA_DIR: dataDir,
      POSTHORN_SECRET: SECRET,
      POSTHORN_SMTP_RELAY: relay,
      POSTHORN_WORKER_CONCURRENCY: concurrency,
      PORT: apiPort, // links in messages point at the API's public URL
      // domains verified in the database have no DNS for the bulk-sender gate to judge
      POSTHORN_BULK_GATE: 'off',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return child;
}

async function stopChild(child: ChildProcess | null) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
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

/**
 * CPU seconds used so far by this process and its descendants, by role: 'bench' (this process:
 * sink and transactional client), 'api', 'worker' and 'postgres' (the embedded server's processes).
 */
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

/** CPU seconds each role used between two readings of cpuByRole. */
function cpuDelta(before: ReturnType<typeof cpuByRole>, after: ReturnType<typeof cpuByRole>) {
  const sums = new Map<string, number>();
  for (const [pid, p] of after) {
    const used = p.seconds - (before.get(pid)?.seconds ?? 0);
    sums.set(p.role, (sums.get(p.role) ?? 0) + used);
  }
  return sums;
}

/** CPU seconds the whole machine has spent busy (all cores), from /proc/stat. */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy
  return (ticks.slice(0, 8).reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) / 100;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The sample message's body as text: quoted-printable soft breaks and escapes undone. */
function decodedSample(raw: string): string {
  return raw
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

const s = (seconds: number) => `${seconds.toFixed(1)} s`;
const n = (x: number) => x.toLocaleString('en');

const sink = await startTimingSink();
const server = await startBenchServer({ POSTHORN_SMTP_RELAY: sink.url, POSTHORN_SECRET: SECRET }, ['api']);
const workerDir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-worker-'));
let worker: ChildProcess | null = null;
const timers: NodeJS.Timeout[] = [];
// on the way out, and after BENCH_MAX_SECONDS or a signal: the processes stopped, the files gone
const guard = guardBench('bench:campaign', maxSeconds, async () => {
  for (const t of timers) clearInterval(t);
  await stopChild(worker);
  await server.stop();
  await sink.close();
  rmSync(workerDir, { recursive: true, force: true });
});

let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server);
  db.on('error', () => {}); // the database stops with the server, on the way out
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await json(`${server.url}${url}`, method, key, body);
    if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  // a sending domain with its own DKIM key, verified here (no DNS), and the footer's postal address
  const domain = await call('POST', '/v1/domains', { domain: DOMAIN });
  await db.query(`update domains set status = 'verified', verified_at = now() where id = $1`, [domain.id]);
  await call('PATCH', '/v1/me/footer', { address: ADDRESS });

  // setup (printed, not a target): contacts and memberships set-based in SQL
  const setupStart = performance.now();
  const big = await call('POST', '/v1/lists', { name: 'Everyone' });
  const readers = await call('POST', '/v1/lists', { name: 'Readers' });
  const addContacts = async (listId: string, count: number, host: string) => {
    await db.query(
      `with made as (
         insert into contacts (project_id, email, first_name, last_name, properties)
         select $1, 'user' || g || '@' || $3::text, 'Reader' || g, 'Bench', jsonb_build_object('plan', case when g % 2 = 0 then 'pro' else 'free' end,
                  -- five zones, a name that is none (the project's zone) and no zone
                  'timezone', (array['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Sydney',
                                     'America/Los_Angeles', 'Not/A_Zone', null])[g % 7 + 1])
           from generate_series(1, $2::int) g
         returning id
       )
       insert into list_members (list_id, contact_id) select $4, id from made`,
      [projectId, count, host, listId],
    );
  };
  await addContacts(big.id, audience, 'audience.example');
  await addContacts(readers.id, recipients, 'readers.example');
  // a topic everyone gets unless they left it, and one in ten of the big audience left it
  const topic = plainSnapshot
    ? null
    : await call('POST', '/v1/topics', { name: 'Weekly digest', default_subscription: 'opt_in' });
  if (topic)
    await db.query(
      `insert into contact_topics (contact_id, topic_id, subscribed)
       select m.contact_id, $2, false from list_members m where m.list_id = $1 and hashtext(m.contact_id::text) % 10 = 0`,
      [big.id, topic.id],
    );
  await db.query('vacuum analyze contact_topics');
  await db.query('vacuum analyze contacts');
  await db.query('vacuum analyze list_members');
  const setupSeconds = (performance.now() - setupStart) / 1000;

  // (1) the snapshot of the big audience, then cancelled before any worker runs
  const html = (links: string[]) =>
    `<html><body><h1>Hello {{ contact.first_name }}</h1>
<p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p>
${links.map((l, i) => `<p><a href="${l}">Read part ${i + 1}</a></p>`).join('\n')}
<p>See you next week, {{ contact.first_name | default: "reader" }}.</p></body></html>`;
  const campaign = (name: string, listId: string) => ({
    name,
    from: `Bench News <news@${DOMAIN}>`,
    subject: 'Your weekly digest, {{ contact.first_name }}',
    html: html([
      'https://shop.example.com/spring?utm_source=news',
      'https://blog.example.com/posts/42',
      'https://example.org/read?issue=7',
    ]),
    list_ids: [listId],
    tracking: { opens: true, clicks: true },
    tags: [{ name: 'bench', value: 'campaign' }],
  });
  const first = await call('POST', '/v1/campaigns', {
    ...campaign('A million', big.id),
    ...(topic ? { topic_id: topic.id, local_time: '09:00' } : {}),
  });
  const countStart = performance.now();
  const preview = await call('GET', `/v1/campaigns/${first.id}/audience`);
  const countSeconds = (performance.now() - countStart) / 1000;
  const snapStart = performance.now();
  const started = await call('POST', `/v1/campaigns/${first.id}/send`);
  const snapSeconds = (performance.now() - snapStart) / 1000;
  const cancelStart = performance.now();
  const cancelled = await json(`${server.url}/v1/campaigns/${first.id}/cancel`, 'POST', key);
  let cancelNote = 'POST /v1/campaigns/{id}/cancel';
  if (cancelled.status !== 200) {
    // no cancel endpoint (yet): the bench stops the campaign itself
    await db.query(`update campaigns set status = 'cancelled' where id = $1`, [first.id]);
    await db.query(`delete from campaign_recipients where campaign_id = $1 and status = 'pending'`, [
      first.id,
    ]);
    cancelNote = `SQL (cancel answered ${cancelled.status}): status 'cancelled', pending recipients deleted`;
  }
  const cancelSeconds = (performance.now() - cancelStart) / 1000;

  // (2)-(4) the worker as its own process, then the 100,000-recipient campaign
  worker = startWorker(server.databaseUrl(), new URL(server.url).port, sink.url, workerDir);
  await new Promise((r) => setTimeout(r, 3000)); // no port to poll: give it time to connect
  if (worker.exitCode !== null) throw new Error('the worker exited at start');
  const workerPid = worker.pid as number;
  const second = await call('POST', '/v1/campaigns', campaign('Weekly digest', readers.id));

  const rss: number[] = [];
  const idleRss = rssMb(workerPid) ?? 0;
  timers.push(
    setInterval(() => {
      const mb = rssMb(workerPid);
      if (mb !== null) rss.push(mb);
    }, 500),
  );
  const tx: { id: string; answeredAt: number }[] = [];
  let txErrors = 0;
  /** The refusals by status and error, to say why (printed when there are any). */
  const txRefusals = new Map<string, number>();
  const refused = (why: string) => {
    txErrors++;
    txRefusals.set(why, (txRefusals.get(why) ?? 0) + 1);
  };
  let txSeq = 0;
  const sendTx = async () => {
    const i = txSeq++;
    const res = await json(`${server.url}/v1/emails`, 'POST', key, {
      from: `Bench <alerts@${DOMAIN}>`,
      to: `user${i}@transactional.example`,
      subject: `Your password reset code ${i}`,
      text: `Your code is ${100000 + i}. It expires in 10 minutes.`,
    });
    if (res.status === 200) tx.push({ id: res.body.id, answeredAt: performance.now() });
    else refused(`${res.status} ${String(res.body?.error ?? '').slice(0, 120)}`);
  };
  const cpuBefore = cpuByRole(workerPid);
  const busyBefore = machineBusySeconds();
  const sendStart = performance.now();
  const sent = await call('POST', `/v1/campaigns/${second.id}/send`);
  const sendCallMs = performance.now() - sendStart;
  const txTimer = setInterval(
    () => void sendTx().catch((err: Error) => refused(`no answer: ${err.message}`)),
    1000 / txPerSecond,
  );
  timers.push(txTimer);
  // when the last email is written (no recipient pending) and when the campaign is `sent`
  const marks = { writtenAt: 0, sentAt: 0 };
  timers.push(
    setInterval(async () => {
      if (marks.sentAt) return;
      const { rows } = await db.query(
        `select status, (select count(*) from campaign_recipients r where r.campaign_id = c.id and r.status = 'pending')::int as pending
           from campaigns c where id = $1`,
        [second.id],
      );
      if (!marks.writtenAt && rows[0].pending === 0) marks.writtenAt = performance.now();
      if (rows[0].status === 'sent') marks.sentAt = performance.now();
    }, 1000),
  );
  const timeoutMs = (120 + recipients / 200) * 1000;
  const complete = await sink.waitForMarketing(recipients, timeoutMs);
  const e2eSeconds = (performance.now() - sendStart) / 1000;
  const cpuAfter = cpuByRole(workerPid);
  const busy = machineBusySeconds() - busyBefore;
  clearInterval(txTimer); // the transactional sends stop with the campaign
  // the last transactional messages get 30 s to arrive
  const txDeadline = Date.now() + 30_000;
  while (tx.some((t) => !sink.arrivals.has(`<${t.id}@${DOMAIN}>`)) && Date.now() < txDeadline)
    await new Promise((r) => setTimeout(r, 100));
  const sentDeadline = Date.now() + 30_000;
  while (!marks.sentAt && Date.now() < sentDeadline) await new Promise((r) => setTimeout(r, 200));
  for (const t of timers) clearInterval(t);

  const latencies = tx
    .map((t) => (sink.arrivals.get(`<${t.id}@${DOMAIN}>`) ?? Number.NaN) - t.answeredAt)
    .filter((x) => !Number.isNaN(x))
    .sort((a, b) => a - b);
  const missingTx = tx.length - latencies.length;
  const distinct = new Set(
    (await db.query(`select email_id from campaign_recipients where campaign_id = $1`, [second.id])).rows
      .map((r) => `<${r.email_id}@${DOMAIN}>`)
      .filter((id) => sink.arrivals.has(id)),
  ).size;
  // (5) the campaign page's reads once it is sent: its stats, and its activity over time
  const reads: Record<string, number[]> = { stats: [], activity: [] };
  for (let i = 0; i < 10; i++)
    for (const [name, url] of [
      ['stats', `/v1/campaigns/${second.id}`],
      ['activity', `/v1/campaigns/${second.id}/activity`],
    ] as const) {
      const t0 = performance.now();
      await call('GET', url);
      reads[name].push(performance.now() - t0);
    }
  const firstAfter = await call('GET', `/v1/campaigns/${first.id}`);
  const firstEmails = Number(
    (await db.query(`select count(*) from emails where campaign_id = $1`, [first.id])).rows[0].count,
  );
  await db.end();

  const sample = decodedSample(sink.state.sample ?? '');
  const sampleChecks = {
    'subject personalised': /^Subject: Your weekly digest, Reader\d+/m.test(sample),
    'body personalised': /Hello Reader\d+/.test(sample),
    'tracked links (html + text)': (sample.match(/\/t\/c\/[\w-]+/g) ?? []).length,
    'open pixel': /\/t\/o\/[\w-]+/.test(sample),
    'footer address': sample.includes('2 High Street, Leeds'),
    'List-Unsubscribe-Post': /^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m.test(sample),
    'DKIM d=': /^DKIM-Signature:[\s\S]*?\bd=([\w.-]+)/m.exec(sample)?.[1] ?? 'none',
  };
  const rate = recipients / e2eSeconds;
  const maxRss = Math.max(0, ...rss);
  const cpu = cpuDelta(cpuBefore, cpuAfter);
  const p99 = percentile(latencies, 99);

  console.log(`Campaign benchmark, ${machine()}; api and worker as two processes, embedded PostgreSQL`);
  console.log(
    `setup (not measured): ${n(audience + recipients)} contacts and their list memberships in SQL, vacuumed, in ${s(setupSeconds)}`,
  );
  console.log(
    `(1) audience of ${n(preview.recipients)}${topic ? " (for a topic, at 09:00 in each recipient's zone)" : ''}: GET /audience (count) ${s(countSeconds)}; POST /send (checks, count and snapshot) ${s(snapSeconds)}, recipient_count ${n(started.recipient_count)}`,
  );
  console.log(
    `    then cancelled in ${s(cancelSeconds)} by ${cancelNote}: status ${firstAfter.status}, emails written ${firstEmails} (the worker started after this)`,
  );
  console.log(
    `(2) ${n(recipients)} recipients, Liquid + 3 tracked links + pixel + footer + DKIM: POST /send answered in ${sendCallMs.toFixed(0)} ms (recipient_count ${n(sent.recipient_count)})`,
  );
  console.log(
    `    all in the sink after ${s(e2eSeconds)}${complete ? '' : ' (INCOMPLETE)'}: ${rate.toFixed(0)} msg/s; emails all written after ${marks.writtenAt ? s((marks.writtenAt - sendStart) / 1000) : '?'}; campaign sent after ${marks.sentAt ? s((marks.sentAt - sendStart) / 1000) : 'not within 30 s'}`,
  );
  console.log(
    `    marketing messages received ${n(sink.state.marketing)}, DKIM-signed ${n(sink.state.signed)}, distinct recipients' Message-IDs ${n(distinct)}`,
  );
  console.log(`    sample message: ${JSON.stringify(sampleChecks)}`);
  console.log(
    `(3) transactional during (2), ${txPerSecond}/s: ${tx.length} accepted (${txErrors} errors, ${missingTx} not received); answer to sink ms p50 ${percentile(latencies, 50).toFixed(0)} p99 ${p99.toFixed(0)} max ${(latencies.at(-1) ?? Number.NaN).toFixed(0)}`,
  );
  for (const [why, count] of txRefusals) console.log(`    refused ${count}: ${why}`);
  console.log(
    `(4) worker RSS: idle ${idleRss.toFixed(0)} MB, max ${maxRss.toFixed(0)} MB over ${rss.length} samples (every 500 ms)`,
  );
  console.log(
    `    CPU during (2), seconds (share of ${s(e2eSeconds)} wall): ${[...cpu]
      .sort((a, b) => b[1] - a[1])
      .map(([role, secs]) => `${role} ${secs.toFixed(1)} (${((100 * secs) / e2eSeconds).toFixed(0)}%)`)
      .join(
        ', ',
      )}; outside the bench ${Math.max(0, busy - [...cpu.values()].reduce((a, b) => a + b, 0)).toFixed(1)}`,
  );
  const readFigures = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `p50 ${percentile(sorted, 50).toFixed(0)} / max ${(sorted.at(-1) ?? 0).toFixed(0)} ms`;
  };
  console.log(
    `(5) after it is sent, 10 reads each: GET /campaigns/{id} (stats) ${readFigures(reads.stats)}; GET /campaigns/{id}/activity ${readFigures(reads.activity)}`,
  );
  console.log(
    `targets: snapshot < 30 s ${snapSeconds < 30 ? 'met' : 'NOT met'}, delivery >= 1000/s ${rate >= 1000 ? 'met' : 'NOT met'}, transactional p99 < 2 s ${p99 < 2000 ? 'met' : 'NOT met'}, worker RSS < 300 MB ${maxRss < 300 ? 'met' : 'NOT met'}`,
  );
  failed = !complete || txErrors > 0 || missingTx > 0 || firstEmails > 0;
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
