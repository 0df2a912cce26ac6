// Authenticated GET /v1/me throughput and latency with a real key, server and PostgreSQL on this
// machine, then proof that revocation takes effect on the very next request.
// Run: npm run bench:api   (BENCH_SECONDS, BENCH_CONNECTIONS; BENCH_LOADGEN=autocannon to skip wrk)
import { load } from './load.ts';
import { json, machine, signupBench, startBenchServer } from './server.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const server = await startBenchServer({}, (process.env.BENCH_ROLES ?? 'start').split(','));
let failed = false;
try {
  const { key, accountKey, projectId } = await signupBench(server);
  const run = (s: number) =>
    load({
      url: `${server.url}/v1/me`,
      headers: { authorization: `Bearer ${key}` },
      connections,
      seconds: s,
    });
  await run(3); // warm-up: JIT, pool connections, prepared statements
  const result = await run(seconds);

  // revocation under load: a second key is revoked while the first is still being hammered
  const second = await json(`${server.url}/v1/projects/${projectId}/api-keys`, 'POST', accountKey, {
    name: 'to revoke',
  });
  const background = run(3);
  await new Promise((r) => setTimeout(r, 1000));
  const before = await json(`${server.url}/v1/me`, 'GET', second.body.key);
  const revoke = await json(`${server.url}/v1/api-keys/${second.body.id}`, 'DELETE', accountKey);
  const after = await json(`${server.url}/v1/me`, 'GET', second.body.key);
  await background;
  const revocationOk = before.status === 200 && revoke.status === 204 && after.status === 401;

  console.log(`GET /v1/me, ${connections} connections, ${seconds} s, load from ${result.tool}, ${machine()}`);
  console.log(
    `  requests/s   ${result.rps.toFixed(0)}   (total ${result.total}, non-2xx/errors ${result.errors})`,
  );
  console.log(`  latency ms   p50 ${result.p50}  p90 ${result.p90}  p99 ${result.p99}`);
  console.log(
    `  revocation: before ${before.status}, DELETE ${revoke.status}, very next request ${after.status}`,
  );
  console.log(
    `  target >= 5000 req/s: ${result.rps >= 5000 ? 'met' : 'NOT met'}; p99 < 25 ms: ${result.p99 < 25 ? 'met' : 'NOT met'}; revocation immediate: ${revocationOk ? 'yes' : 'NO'}`,
  );
  failed = !revocationOk || result.errors > 0;
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
