// A host that takes 20 messages a minute (issue 46): Posthorn's direct route at its defaults (no
// `sites` entry naming the host) sends it 200 messages. The host defers every message past 20 in a
// rolling minute at MAIL FROM with Google's 4.7.28 answer. The route must learn the pace from that
// first refusal and keep under it: the figures are the time until the 200th message arrived (the
// issue's bound: 12 minutes; pacing exactly to the limit takes 10) and the refusals after the first
// burst (the bound: none). Posthorn runs as api and worker processes on an embedded PostgreSQL.
// Everything listens on 127.0.0.0/8: a DNS server, the host on 127.0.0.97.
// Run: node bench/throttled-host.ts (BENCH_MESSAGES, default 200; BENCH_PER_MINUTE, default 20)
import { directBench } from './direct-bench.ts';
import { machine } from './server.ts';

const messages = Number(process.env.BENCH_MESSAGES ?? 200);
const perMinute = Number(process.env.BENCH_PER_MINUTE ?? 20);
const { net, guard, start } = await directBench('bench:throttled-host', 1500);

try {
  const host = await net.server('mx.throttled.test', '127.0.0.97', { perMinute });
  net.mx('throttled.test', [[10, 'mx.throttled.test']]);
  const { db, send } = await start({});
  const started = performance.now();
  await send(messages, (i) => `reader${i}@throttled.test`);
  // the refusals of the first burst: those the host gave before the route's first hold was over
  let firstBurst = -1;
  let lastSeen = -1;
  while (host.messages.length < messages) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const elapsed = (performance.now() - started) / 1000;
    if (firstBurst === -1 && elapsed > 30) firstBurst = host.rateDeferrals;
    if (Math.floor(elapsed) % 60 === 0 && host.messages.length !== lastSeen) {
      lastSeen = host.messages.length;
      console.log(
        `  ${Math.round(elapsed)} s: ${host.messages.length} arrived, ${host.rateDeferrals} refused`,
      );
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const { rows } = await db.query<{ held: number }>(
    `select count(*)::int as held from email_events where type = 'held'`,
  );
  await db.end();
  console.log(`bench:throttled-host, ${new Date().toISOString()}, ${machine()}`);
  console.log(
    `  ${messages} messages to a host that takes ${perMinute} a minute: all arrived in ${(seconds / 60).toFixed(1)} min (pacing exactly to the limit: ${(messages / perMinute) | 0} min)`,
  );
  console.log(
    `  refusals: ${host.rateDeferrals} in all, ${Math.max(0, firstBurst)} in the first burst, ${host.rateDeferrals - Math.max(0, firstBurst)} after it; most in a rolling minute: ${host.maxPerMinute}; held events: ${rows[0].held}`,
  );
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await guard.done();
}
