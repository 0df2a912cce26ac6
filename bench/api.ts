// Authenticated GET /v1/me throughput and latency with a real key, server and PostgreSQL on this
// machine, then proof that revocation takes effect on the very next request.
// Run: npm run bench:api   (BENCH_SECONDS, BENCH_CONNECTIONS to change the load)
import autocannon from 'autocannon';
import { json, machine, startBenchServer } from './server.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const server = await startBenchServer({}, (process.env.BENCH_ROLES ?? 'start').split(','));
let failed = false;
try {
  const signup = await json(`${server.url}/v1/signup`, 'POST', undefined, {
    email: 'bench@example.com',
    name: 'Bench',
    accept_terms: true,
  });
  const key: string = signup.body.project_key.key;
  const accountKey: string = signup.body.account_key.key;
  const projectId: string = signup.body.project.id;

  const run = (duration: number) =>
    autocannon({
      url: `${server.url}/v1/me`,
      connections,
      duration,
      headers: { authorization: `Bearer ${key}` },
    });
  await run(3); // warm-up: JIT, pool connections, prepared statements
  const result = await run(seconds);
  const non2xx = result.non2xx + result.errors + result.timeouts;

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

  const rps = result.requests.average;
  const p99 = result.latency.p99;
  console.log(`GET /v1/me, ${connections} connections, ${seconds} s, ${machine()}`);
  console.log(
    `  requests/s   avg ${rps.toFixed(0)}  (min ${result.requests.min}, max ${result.requests.max})`,
  );
  console.log(
    `  latency ms   p50 ${result.latency.p50}  p90 ${result.latency.p90}  p99 ${p99}  max ${result.latency.max}`,
  );
  console.log(`  total ${result.requests.total}, non-2xx/errors ${non2xx}`);
  console.log(
    `  revocation: before ${before.status}, DELETE ${revoke.status}, very next request ${after.status}`,
  );
  console.log(
    `  target >= 5000 req/s: ${rps >= 5000 ? 'met' : 'NOT met'}; p99 < 25 ms: ${p99 < 25 ? 'met' : 'NOT met'}; revocation immediate: ${revocationOk ? 'yes' : 'NO'}`,
  );
  failed = !revocationOk || non2xx > 0;
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
