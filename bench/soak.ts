// Soak: SOAK_MINUTES (20) of mixed load at about half of what this machine measured, against
// Posthorn as three processes (api, worker, smtp) on an embedded PostgreSQL, with the sink and a
// webhook receiver in this process:
//   - POST /v1/emails at 50/s and POST /v1/emails/batch at one batch of 100 every 2 s (100 msg/s),
//   - SMTP submissions (STARTTLS + AUTH) at 20/s over a pool of 4 connections,
//   - POST /v1/events at 50/s (a purchase with a value in one of ten),
//   - POST /v1/contacts at 10/s, each announced to a webhook endpoint (contact.created),
//   - a campaign to a list of 2,000 contacts every 4 minutes.
// Together about 130 messages a second delivered and 110 API requests a second: with everything on
// the same 2 cores (a short run at 2.5 times this let the queue grow), about half of what they carry.
// It prints progress every 30 s, then waits (bounded) for the queue to drain and prints: messages
// acknowledged vs delivered by Message-ID (0 lost; duplicates, same Message-ID, counted apart),
// errors by kind, webhooks received, RSS of each process after the warm-up and at the end, and the
// peak of each half after the warm-up (growth peak to peak; target < 10 % for the Node processes),
// and the largest tables.
// Run: node bench/soak.ts   (SOAK_MINUTES; SOAK_RATE scales every rate, 1 = as above)
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { freePort } from '../src/db/embedded.ts';
import { json, machine, readyBenchAccount, startBenchServer } from './server.ts';
import { startBenchSink } from './sink.ts';

const minutes = Number(process.env.SOAK_MINUTES ?? 20);
const scale = Number(process.env.SOAK_RATE ?? 1);
const durationMs = minutes * 60_000;
const warmupMs = Math.min(120_000, durationMs / 10);
const DOMAIN = 'soak.example';
const ADDRESS = 'Posthorn Soak Ltd, 2 High Street, Leeds LS1 1AA';
const HTML = `<h1>Hello</h1><p>${'A paragraph of a typical message. '.repeat(20)}</p><p><a href="https://example.org/x">More</a></p>`;

const errors = new Map<string, number>();
const samples: { at: number; m: Record<string, { node: number; postgres: number }> }[] = [];
const fail = (kind: string) => errors.set(kind, (errors.get(kind) ?? 0) + 1);
const acked: string[] = []; // email ids acknowledged to a client
let webhooksReceived = 0;
let contactsCreated = 0;
let eventsAccepted = 0;

const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    webhooksReceived++;
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const sink = await startBenchSink();
const submissionPort = await freePort();
const server = await startBenchServer(
  {
    POSTHORN_SMTP_RELAY: sink.url,
    POSTHORN_SMTP_PORT: String(submissionPort),
    POSTHORN_MX_PORT: String(await freePort()),
    POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
    POSTHORN_WORKER_CONCURRENCY: '8',
  },
  ['api', 'worker', 'smtp'],
);

/**
 * Resident memory of a process, and of all its descendants (the embedded PostgreSQL is the api's) as
 * their proportional share (PSS): each PostgreSQL backend maps the same shared buffers, which a sum
 * of RSS would count once per backend.
 */
function rssMb(pid: number): { own: number; children: number } {
  const kb = (file: string, field: string) => {
    try {
      return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(file, 'utf8'))?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  };
  const read = (p: number) => kb(`/proc/${p}/status`, 'VmRSS');
  const share = (p: number) => kb(`/proc/${p}/smaps_rollup`, 'Pss');
  const parentOf = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parentOf.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const descendants = (p: number): number[] =>
    [...parentOf].filter(([, pp]) => pp === p).flatMap(([c]) => [c, ...descendants(c)]);
  return { own: read(pid), children: descendants(pid).reduce((n, c) => n + share(c), 0) };
}
const memory = () =>
  Object.fromEntries(
    server.pids.map(({ role, pid }) => {
      const m = rssMb(pid);
      return [role, role === 'api' ? { node: m.own, postgres: m.children } : { node: m.own, postgres: 0 }];
    }),
  );

/** Calls `fn` `perSecond` times a second (in ticks of 100 ms) until `until`. */
function every(perSecond: number, until: number, fn: () => Promise<void>) {
  let owed = 0;
  const timer = setInterval(() => {
    if (Date.now() >= until) return clearInterval(timer);
    owed += (perSecond * scale) / 10;
    while (owed >= 1) {
      owed--;
      void fn().catch((err) => fail(`exception: ${(err as Error).message.slice(0, 60)}`));
    }
  }, 100);
  return timer;
}

let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const call = (method: string, path: string, body?: unknown) =>
    json(`${server.url}${path}`, method, key, body);
  await call('PATCH', '/v1/me/footer', { address: ADDRESS });
  const hook = await call('POST', '/v1/webhooks', { url: hookUrl, events: ['contact.created'] });
  if (hook.status !== 200) throw new Error(`webhook endpoint refused: ${JSON.stringify(hook.body)}`);
  // the campaign audience: 2,000 contacts on a list, made in SQL (not announced to the webhook)
  const list = await call('POST', '/v1/lists', { name: 'Soak readers' });
  await db.query(
    `insert into contacts (project_id, email, first_name) select $1, 'reader' || g || '@example.org', 'Reader' || g
       from generate_series(1, 2000) g`,
    [projectId],
  );
  await db.query(
    `insert into list_members (list_id, contact_id) select $1, id from contacts where project_id = $2`,
    [list.body.id, projectId],
  );
  const message = (i: string) => ({
    from: `Soak <news@${DOMAIN}>`,
    to: `r${i}@example.org`,
    subject: `Soak ${i}`,
    html: HTML,
  });
  const smtp = nodemailer.createTransport({
    pool: true,
    maxConnections: 4,
    host: '127.0.0.1',
    port: submissionPort,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: 'posthorn', pass: key },
  });

  // the smtp process listens once it has started: wait for its port before the load begins
  for (let tries = 0; ; tries++) {
    try {
      await smtp.verify();
      break;
    } catch (err) {
      if (tries > 60) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const started = Date.now();
  const until = started + durationMs;
  let n = 0;
  const campaigns: string[] = [];
  const timers = [
    every(50, until, async () => {
      const res = await call('POST', '/v1/emails', message(`s${n++}`));
      if (res.status === 200) acked.push(res.body.id);
      else fail(`POST /emails ${res.status}`);
    }),
    every(0.5, until, async () => {
      const res = await call(
        'POST',
        '/v1/emails/batch',
        Array.from({ length: 100 }, () => message(`b${n++}`)),
      );
      if (res.status === 200) for (const e of res.body.data) acked.push(e.id);
      else fail(`POST /emails/batch ${res.status}`);
    }),
    every(20, until, async () => {
      try {
        const info = await smtp.sendMail(message(`m${n++}`));
        const id = /queued as ([\w-]+)/.exec(info.response)?.[1];
        if (id) acked.push(id);
        else fail('SMTP 250 without an id');
      } catch (err) {
        const e = err as { responseCode?: number; message?: string };
        fail(`SMTP ${e.responseCode ?? e.message?.slice(0, 40) ?? 'error'}`);
      }
    }),
    every(50, until, async () => {
      const i = Math.floor(Math.random() * 2000) + 1;
      const purchase = i % 10 === 0;
      const res = await call('POST', '/v1/events', {
        email: `reader${i}@example.org`,
        event: purchase ? 'purchase' : 'page_viewed',
        ...(purchase ? { value: 20, currency: 'EUR' } : {}),
      });
      if (res.status === 200) eventsAccepted++;
      else fail(`POST /events ${res.status}`);
    }),
    every(10, until, async () => {
      const res = await call('POST', '/v1/contacts', { email: `new${n++}@example.org` });
      if (res.status === 200) contactsCreated++;
      else fail(`POST /contacts ${res.status}`);
    }),
  ];
  const sendCampaign = async () => {
    if (Date.now() >= until) return;
    const made = await call('POST', '/v1/campaigns', {
      name: `Soak ${campaigns.length + 1}`,
      from: `Soak <news@${DOMAIN}>`,
      subject: 'Hello {{ contact.first_name }}',
      html: HTML,
      list_ids: [list.body.id],
    });
    const sent = made.status === 200 ? await call('POST', `/v1/campaigns/${made.body.id}/send`) : made;
    if (sent.status === 200) campaigns.push(made.body.id);
    else fail(`campaign ${sent.status}: ${JSON.stringify(sent.body).slice(0, 80)}`);
  };
  void sendCampaign();
  const campaignTimer = setInterval(() => void sendCampaign(), 240_000);

  let afterWarmup: ReturnType<typeof memory> | null = null;
  const errorCount = () => [...errors.values()].reduce((a, b) => a + b, 0);
  // a point reading swings with the collector (the api went 312 → 200 → 301 MB in one run), so RSS
  // is also sampled every 10 s, and the peak of the first half after the warm-up is compared with
  // the peak of the second: memory that leaks raises the second; a heap that has found its size does not
  const sampler = setInterval(() => samples.push({ at: Date.now() - started, m: memory() }), 10_000);
  const progress = setInterval(() => {
    const m = memory();
    if (!afterWarmup && Date.now() - started >= warmupMs) afterWarmup = m;
    console.log(
      `${Math.round((Date.now() - started) / 1000)} s: acked ${acked.length}, delivered ${sink.count}, campaigns ${campaigns.length}, events ${eventsAccepted}, webhooks ${webhooksReceived}/${contactsCreated}, errors ${errorCount()}; RSS MB ${Object.entries(
        m,
      )
        .map(([r, v]) => `${r} ${v.node.toFixed(0)}`)
        .join(', ')}, postgres ${m.api?.postgres.toFixed(0)}`,
    );
  }, 30_000);
  while (Date.now() < until) await new Promise((r) => setTimeout(r, 1000));
  const atEnd = memory();
  samples.push({ at: Date.now() - started, m: atEnd });
  for (const t of timers) clearInterval(t);
  clearInterval(campaignTimer);
  clearInterval(progress);
  clearInterval(sampler);
  await new Promise((r) => setTimeout(r, 2000)); // requests in flight come back
  smtp.close();

  // drain: nothing queued, sending or deferred, and every campaign finished (bounded: 15 minutes)
  const drainStart = Date.now();
  const pending = async () =>
    Number(
      (
        await db.query(
          `select (select count(*) from emails where status in ('queued', 'sending', 'deferred', 'scheduled'))
                + (select count(*) from campaigns where status in ('sending', 'scheduled')) as n`,
        )
      ).rows[0].n,
    );
  while ((await pending()) > 0 && Date.now() - drainStart < 900_000)
    await new Promise((r) => setTimeout(r, 2000));
  const drainedIn = (Date.now() - drainStart) / 1000;

  const campaignIds = (
    await db.query(`select email_id from campaign_recipients where campaign_id = any($1::uuid[])`, [
      campaigns,
    ])
  ).rows.map((r) => r.email_id as string);
  const ids = [...acked, ...campaignIds];
  const { rows } = await db.query(`select id, message_id, status from emails where id = any($1::uuid[])`, [
    ids,
  ]);
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  const missing = ids.filter((id) => !byId.has(id)).length;
  const notDelivered = ids.filter((id) => !sink.messageIds.has(byId.get(id)?.message_id)).length;
  const statusOf = new Map<string, number>();
  for (const r of rows) statusOf.set(r.status, (statusOf.get(r.status) ?? 0) + 1);
  const duplicates = sink.count - sink.messageIds.size;
  const tables = (
    await db.query(
      `select relname, pg_size_pretty(pg_total_relation_size(c.oid)) as size
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' order by pg_total_relation_size(c.oid) desc limit 10`,
    )
  ).rows;
  await db.end();

  const growth = (a: number, b: number) =>
    `${a.toFixed(0)} → ${b.toFixed(0)} MB (${(((b - a) / a) * 100).toFixed(1)} %)`;
  const warm = afterWarmup ?? atEnd;
  const middle = (warmupMs + durationMs) / 2;
  const peak = (role: string, from: number, to: number) =>
    Math.max(...samples.filter((x) => x.at > from && x.at <= to).map((x) => x.m[role]?.node ?? 0));
  const peaks = Object.fromEntries(
    Object.keys(atEnd).map((r) => [
      r,
      [peak(r, warmupMs, middle), peak(r, middle, Number.POSITIVE_INFINITY)],
    ]),
  );
  const nodeGrowth = Object.values(peaks).map(([a, b]) => (b - a) / a);
  console.log(
    `\nSoak, ${machine()}: ${minutes} min of mixed load (rate ×${scale}), processes api + worker + smtp`,
  );
  console.log('| figure | value |\n|---|---|');
  console.log(
    `| messages acknowledged (API ${acked.length.toLocaleString()} incl. SMTP, campaigns ${campaignIds.length.toLocaleString()} in ${campaigns.length} campaigns) | ${ids.length.toLocaleString()} |`,
  );
  console.log(`| delivered to the sink, by Message-ID | ${(ids.length - notDelivered).toLocaleString()} |`);
  console.log(`| lost (acknowledged, never delivered) | **${notDelivered}** (${missing} without a row) |`);
  console.log(`| duplicates (same Message-ID again) | ${duplicates} |`);
  console.log(
    `| statuses at the end | ${[...statusOf].map(([s, c]) => `${s} ${c.toLocaleString()}`).join(', ')} |`,
  );
  console.log(`| queue drained after the load in | ${drainedIn.toFixed(0)} s |`);
  console.log(
    `| events accepted / contacts created / webhooks received | ${eventsAccepted.toLocaleString()} / ${contactsCreated.toLocaleString()} / ${webhooksReceived.toLocaleString()} |`,
  );
  console.log(`| errors | ${errors.size === 0 ? 0 : [...errors].map(([k, v]) => `${k}: ${v}`).join('; ')} |`);
  for (const role of Object.keys(atEnd)) {
    console.log(`| RSS ${role} (Node), after warm-up → end | ${growth(warm[role].node, atEnd[role].node)} |`);
    console.log(
      `| RSS ${role} (Node), peak of the first half after warm-up → of the second | ${growth(peaks[role][0], peaks[role][1])} |`,
    );
  }
  console.log(
    `| PSS embedded PostgreSQL (all its processes), after warm-up → end | ${growth(warm.api.postgres, atEnd.api.postgres)} |`,
  );
  console.log(`| largest tables | ${tables.map((t) => `${t.relname} ${t.size}`).join(', ')} |`);
  console.log(
    `target: 0 lost ${notDelivered === 0 ? 'met' : 'NOT met'}; RSS growth (peak to peak) < 10 % ${nodeGrowth.every((g) => g < 0.1) ? 'met' : 'NOT met'}`,
  );
  failed = notDelivered > 0;
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await server.stop();
  await sink.close();
  receiver.close();
}
process.exit(failed ? 1 : 0);
