// A warm-up plan over a simulated month (issue 33): the default 30-day schedule, scaled down by
// BENCH_SCALE (10: 79,815 messages), one campaign to an audience of exactly the plan's sum, and
// each day some transactional mail from the same domain (0 to 5 % of the day's volume: never held,
// but counted). Posthorn runs in this process (api and worker on an embedded PostgreSQL), so the
// service's calendar can be moved a day at a time (src/domain/core/clock.ts); mail leaves through
// the feedback simulator (a `simulated` route: 0.5 % hard bounces, 0.02 % complaints). For each
// day: the plan's volume, what the campaign wrote, the transactional mail, what the day counted,
// and the error |counted - volume| / volume (target: within 5 % every day).
// Run: node bench/warmup.ts   (BENCH_SCALE to change the scale)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { addJobs } from '../src/db/enqueue.ts';
import { campaignJob } from '../src/domain/campaigns/send.ts';
import { dayOf, moveClock, now } from '../src/domain/core/clock.ts';
import { DEFAULT_WARMUP_SCHEDULE } from '../src/domain/shaping/warmup.ts';
import { startRuntime } from '../src/runtime.ts';
import { guardBench, json, machine, readyBenchAccount } from './server.ts';

const SCALE = Number(process.env.BENCH_SCALE ?? 10);
const DOMAIN = 'warm.bench.example';
const ADDRESS = 'Posthorn Bench Ltd, 2 High Street, Leeds LS1 1AA';
const schedule = DEFAULT_WARMUP_SCHEDULE.map((v) => Math.max(5, Math.round(v / SCALE)));
const total = schedule.reduce((a, b) => a + b, 0);

const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-warmup-bench-'));
const routesFile = path.join(dataDir, 'routes.json');
writeFileSync(
  routesFile,
  JSON.stringify({
    routes: { sim: { type: 'simulated', bounce_rate: 0.5, complaint_rate: 0.02 } },
    rules: [{ match: {}, routes: ['sim'] }],
  }),
);
const runtime = await startRuntime(
  loadConfig({
    ...process.env,
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
    POSTHORN_DATA_DIR: dataDir,
    PORT: '0',
    POSTHORN_ROUTES: routesFile,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_RATE_LIMIT: '0',
    POSTHORN_WORKER_CONCURRENCY: '8',
    LOG_LEVEL: 'warn',
  }),
  ['api', 'worker'],
);
const url = runtime.url as string;
const server = {
  url,
  databaseUrl: () =>
    (runtime.ctx.pool as unknown as { options: { connectionString: string } }).options.connectionString,
  pids: [],
  // in this process: its log is this bench's own output
  output: () => '',
  stop: async () => {
    await runtime.stop();
    rmSync(dataDir, { recursive: true, force: true });
  },
};
const guard = guardBench('bench:warmup', Number(process.env.BENCH_MAX_SECONDS ?? 1800), () => server.stop());
let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await json(`${url}${p}`, method, key, body);
    if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  await call('PATCH', '/v1/me/footer', { address: ADDRESS });
  const domainId = (await db.query('select id from domains where project_id = $1', [projectId])).rows[0].id;
  const list = await call('POST', '/v1/lists', { name: 'Everyone' });
  await db.query(
    `insert into contacts (project_id, email)
     select $1, 'delivered+w' || g || '@simulator.posthorn.test' from generate_series(1, $2) g`,
    [projectId, total],
  );
  await db.query(
    `insert into list_members (list_id, contact_id) select $1, id from contacts where project_id = $2`,
    [list.id, projectId],
  );
  await call('PATCH', `/v1/domains/${domainId}`, { warmup: { schedule } });
  const campaign = await call('POST', '/v1/campaigns', {
    name: 'Warm-up month',
    from: `News <news@${DOMAIN}>`,
    subject: 'Hello',
    html: '<p>Hello</p>',
    list_ids: [list.id],
  });
  const q = async (sql: string, args: unknown[]) => Number((await db.query(sql, args)).rows[0]?.n ?? 0);
  const used = () =>
    q('select used as n from warmup_usage where domain_id = $1 and day = $2', [domainId, dayOf(now())]);
  const written = () =>
    q(`select count(*) as n from campaign_recipients where campaign_id = $1 and status <> 'pending'`, [
      campaign.id,
    ]);
  const pending = () =>
    q(`select count(*) as n from campaign_recipients where campaign_id = $1 and status = 'pending'`, [
      campaign.id,
    ]);
  const parkedMs = () =>
    q(
      `select extract(epoch from run_at - now()) * 1000 as n from graphile_worker.jobs
        where key = $1 and locked_at is null`,
      [`campaign:${campaign.id}`],
    );
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 300_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not after 300 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  console.log(
    `A warm-up month: the default schedule / ${SCALE} (${total.toLocaleString()} messages over 30 days), ${machine()}`,
  );
  console.log('| day | volume | campaign | transactional | counted | error |');
  console.log('|---|---|---|---|---|---|');
  const errors: number[] = [];
  let before = 0;
  const started = Date.now();
  for (const [index, volume] of schedule.entries()) {
    const day = index + 1;
    let transactional = 0;
    if (day === 1) await call('POST', `/v1/campaigns/${campaign.id}/send`);
    else {
      moveClock(86_400_000);
      // 0 to 5 % of the day's volume, the same on every run
      transactional = Math.floor((volume * ((day * 37) % 6)) / 100);
      const ids: string[] = [];
      for (let i = 0; i < transactional; i += 100) {
        const batch = Array.from({ length: Math.min(100, transactional - i) }, (_, j) => ({
          from: `Receipts <receipts@${DOMAIN}>`,
          to: `delivered+r${day}n${i + j}@simulator.posthorn.test`,
          subject: 'Your receipt',
          text: 'Thanks',
        }));
        ids.push(...(await call('POST', '/v1/emails/batch', batch)).data.map((e: { id: string }) => e.id));
      }
      await until(`day ${day} receipts`, async () =>
        ids.length === 0
          ? true
          : (await q(
              `select count(*) as n from emails where id = any($1::uuid[]) and status in ('queued', 'sending')`,
              [ids],
            )) === 0,
      );
      await addJobs([campaignJob(campaign.id)]).execute(runtime.ctx.db);
    }
    await until(
      `day ${day}`,
      async () =>
        ((await used()) >= volume || (await pending()) === 0) &&
        ((await pending()) === 0 || (await parkedMs()) > 60_000),
    );
    const counted = await used();
    const wrote = (await written()) - before;
    before += wrote;
    const error = Math.abs(counted - volume) / volume;
    errors.push(error);
    console.log(
      `| ${day} | ${volume.toLocaleString()} | ${wrote.toLocaleString()} | ${transactional} | ${counted.toLocaleString()} | ${(error * 100).toFixed(2)} % |`,
    );
  }
  const worst = Math.max(...errors);
  console.log(
    `largest daily error ${(worst * 100).toFixed(2)} %, mean ${((errors.reduce((a, b) => a + b, 0) / errors.length) * 100).toFixed(2)} %; ${before.toLocaleString()} campaign messages in ${((Date.now() - started) / 1000).toFixed(0)} s of wall time`,
  );
  console.log(`target: within 5 % of the plan every day: ${worst <= 0.05 ? 'met' : 'NOT met'}`);
  if (worst > 0.05) failed = true;
  await db.end();
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
