// The circuit breaker (issue 33) on campaigns of 10,000 recipients, through the worker at full
// speed: the simulator's addresses complain or bounce at set rates (`complained+n@`,
// `bounced+n@simulator.posthorn.test`, spread evenly through the audience), against the default
// thresholds (complaints stop at 0.3 %, hard bounces at 5 %, judged from 200 messages). For each
// campaign: the messages the breaker judged when it tripped, the messages handed over in all once
// nothing of it is on its way any more, and so the messages sent after the trip (target: at most
// 100, and none after the pause). A clean campaign beside them shows the breaker leaves one alone.
// Posthorn runs as api + worker processes on an embedded PostgreSQL; contacts are made set-based.
// Run: node bench/breaker.ts   (BENCH_RECIPIENTS to change the audience)
import { guardBench, json, machine, readyBenchAccount, startBenchServer } from './server.ts';

const recipients = Number(process.env.BENCH_RECIPIENTS ?? 10_000);
const DOMAIN = 'bench.example';
const ADDRESS = 'Posthorn Bench Ltd, 2 High Street, Leeds LS1 1AA';

/** Each campaign's audience: every `every`-th recipient complains or bounces (0: nobody does). */
const CASES = [
  { name: 'complaints 0.5 %', kind: 'complained', every: 200 },
  { name: 'complaints 2 %', kind: 'complained', every: 50 },
  { name: 'complaints 10 %', kind: 'complained', every: 10 },
  { name: 'hard bounces 8 %', kind: 'bounced', every: 12 },
  { name: 'hard bounces 50 %', kind: 'bounced', every: 2 },
  { name: 'clean', kind: 'delivered', every: 0 },
] as const;

const server = await startBenchServer({ POSTHORN_WORKER_CONCURRENCY: '8' }, ['api', 'worker']);
const guard = guardBench('bench:breaker', Number(process.env.BENCH_MAX_SECONDS ?? 1200), () => server.stop());
let failed = false;
try {
  const { key, projectId, db } = await readyBenchAccount(server, { domain: DOMAIN });
  const footer = await json(`${server.url}/v1/me/footer`, 'PATCH', key, { address: ADDRESS });
  if (footer.status !== 200) throw new Error(`footer: ${JSON.stringify(footer.body)}`);
  console.log(`The circuit breaker on campaigns of ${recipients.toLocaleString()} recipients, ${machine()}`);
  console.log('| audience | tripped on | judged at | handed over in all | after the trip | paused |');
  console.log('|---|---|---|---|---|---|');
  for (const [c, spec] of CASES.entries()) {
    const list = await json(`${server.url}/v1/lists`, 'POST', key, { name: spec.name });
    // the audience made set-based: every `every`-th address is the case's, the rest delivered
    await db.query(
      `insert into contacts (project_id, email)
       select $1, case when $3 > 0 and g % $3 = 0 then $4 else 'delivered' end || '+c' || $5 || 'n' || g || '@simulator.posthorn.test'
         from generate_series(1, $2) g`,
      [projectId, recipients, spec.every, spec.kind, c],
    );
    await db.query(
      `insert into list_members (list_id, contact_id)
       select $1, id from contacts where project_id = $2 and email like '%+c' || $3 || 'n%'`,
      [list.body.id, projectId, c],
    );
    const created = await json(`${server.url}/v1/campaigns`, 'POST', key, {
      name: spec.name,
      from: `News <news@${DOMAIN}>`,
      subject: 'Hello',
      html: '<p>Hello</p>',
      list_ids: [list.body.id],
    });
    if (created.status !== 200) throw new Error(`campaign: ${JSON.stringify(created.body)}`);
    const id = created.body.id as string;
    const sent = await json(`${server.url}/v1/campaigns/${id}/send`, 'POST', key);
    if (sent.status !== 200) throw new Error(`send: ${JSON.stringify(sent.body)}`);
    // until it is paused or sent, and nothing of it is on its way
    const deadline = Date.now() + 300_000;
    let status = '';
    for (;;) {
      status = (await json(`${server.url}/v1/campaigns/${id}`, 'GET', key)).body.status;
      const moving = Number(
        (await db.query(`select count(*) from emails where campaign_id = $1 and status = 'sending'`, [id]))
          .rows[0].count,
      );
      if ((status === 'paused' || status === 'sent') && moving === 0) break;
      if (Date.now() > deadline) throw new Error(`campaign ${spec.name} still ${status} after 300 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const over = Number(
      (
        await db.query(
          `select count(*) from emails where campaign_id = $1
             and status in ('sent', 'delivered', 'complained', 'bounced', 'deferred')`,
          [id],
        )
      ).rows[0].count,
    );
    const trip = (
      await db.query(
        `select metric, messages, rate from breaker_trips where key = $1 and level = 'stop' order by created_at limit 1`,
        [id],
      )
    ).rows[0] as { metric: string; messages: string; rate: string } | undefined;
    const judged = trip ? Number(trip.messages) : null;
    console.log(
      `| ${spec.name} | ${trip ? `${trip.metric} ${Number(trip.rate).toFixed(2)} %` : 'none'} | ${judged ?? '—'} | ${over} | ${judged === null ? '—' : over - judged} | ${status === 'paused' ? 'yes' : 'no (sent)'} |`,
    );
    if (spec.every === 0 ? status !== 'sent' : status !== 'paused' || judged === null || over - judged > 100)
      failed = true;
    // the same mail stopped the domain and the project as well: resumed for the next case
    const resumed = await json(`${server.url}/v1/breaker/resume`, 'POST', key, {
      reason: 'bench: the next case',
    });
    if (resumed.status !== 200 && resumed.status !== 400)
      throw new Error(`resume: ${JSON.stringify(resumed.body)}`);
  }
  await db.end();
  console.log(
    `targets: each tripping campaign paused within 100 messages of its trip, the clean one sent: ${failed ? 'NOT met' : 'met'}`,
  );
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await guard.done();
}
process.exit(failed ? 1 : 0);
