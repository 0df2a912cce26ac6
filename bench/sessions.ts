// How many SMTP sessions one worker process holds open at once (issue 46): a simulated mail server
// that takes the data and answers only after BENCH_DELAY_SECONDS (default 120), behind ten MX names
// (ten sites: a site takes at most 1,000 connections per source address), the route told each may
// have a tenth of BENCH_SESSIONS connections (default 5,000), and that many messages. Every message
// waits in a session of its own: the figure is the most sessions the site's server saw open at
// once, and the worker process's resident memory (VmRSS) at that moment. The target:
// 5,000 sessions under 1 GB. Posthorn runs as api and worker processes on an embedded PostgreSQL;
// the site and a DNS server listen on 127.0.0.0/8.
// Run: node bench/sessions.ts
import { readFileSync } from 'node:fs';
import { directBench } from './direct-bench.ts';
import { machine } from './server.ts';

const sessions = Number(process.env.BENCH_SESSIONS ?? 5_000);
const delaySeconds = Number(process.env.BENCH_DELAY_SECONDS ?? 120);
const { net, guard, start } = await directBench('bench:sessions', 900);

/** A process's resident memory in MB, from /proc. */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

try {
  const SITES = 10;
  const slow = await net.server('mx.slow0.test', '127.0.0.98', { delayMs: delaySeconds * 1000, tls: false });
  const sites: Record<string, { max_connections: number; messages_per_connection: number }> = {};
  for (let i = 0; i < SITES; i++) {
    if (i > 0) net.address(`mx.slow${i}.test`, '127.0.0.98');
    net.mx(`slow${i}.test`, [[10, `mx.slow${i}.test`]]);
    sites[`mx.slow${i}.test`] = { max_connections: Math.ceil(sessions / SITES), messages_per_connection: 1 };
  }
  const { server, db, send } = await start({ sites }, { POSTHORN_DELIVERY_IN_FLIGHT: String(sessions * 2) });
  const worker = server.pids.find((p) => p.role === 'worker')?.pid as number;
  await db.end();
  const idle = rssMb(worker);
  const started = performance.now();
  await send(sessions, (i) => `reader${i}@slow${i % SITES}.test`);
  let most = 0;
  let rssAtMost = idle;
  let peakRss = idle;
  // until every message is in a session, or the first answers come (then sessions only fall)
  while ((performance.now() - started) / 1000 < delaySeconds - 5) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rss = rssMb(worker);
    peakRss = Math.max(peakRss, rss);
    if (slow.connections > most) {
      most = slow.connections;
      rssAtMost = rss;
    }
    if (most >= sessions) break;
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`bench:sessions, ${new Date().toISOString()}, ${machine()}`);
  console.log(
    `  one worker process, a site answering after ${delaySeconds} s: ${most} sessions open at once (of ${sessions} messages) after ${seconds.toFixed(1)} s`,
  );
  console.log(`  worker RSS: ${idle} MB idle, ${rssAtMost} MB at the most sessions, ${peakRss} MB peak`);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await guard.done();
}
