import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SIM_NETWORKS, type SimInternet, startSimInternet } from '../test/helpers/sim-internet.ts';
import { type BenchServer, guardBench, json, readyBenchAccount, startBenchServer } from './server.ts';

/**
 * The frame of a benchmark of one direct route on a simulated internet (bench:sessions,
 * bench:throttled-host): a lean simulated internet, Posthorn as api and worker processes whose one
 * route is `direct` (with `route`'s settings), an account ready to send, and a way to send
 * messages in batches of 100; everything stopped at the end or after BENCH_MAX_SECONDS.
 */
export async function directBench(name: string, maxSeconds: number) {
  const net: SimInternet = await startSimInternet({ lean: true });
  let server: BenchServer | undefined;
  const guard = guardBench(name, Number(process.env.BENCH_MAX_SECONDS ?? maxSeconds), async () => {
    await server?.stop();
    await net.close();
  });
  return {
    net,
    guard,
    /** Starts Posthorn with a direct route of these settings, and readies its account. */
    async start(route: Record<string, unknown>, env: Record<string, string> = {}) {
      const routes = path.join(tmpdir(), `posthorn-${name.replace(/\W/g, '-')}-${process.pid}.json`);
      writeFileSync(
        routes,
        JSON.stringify({
          routes: { direct: { type: 'direct', port: net.port, allow_networks: SIM_NETWORKS, ...route } },
          rules: [{ match: {}, routes: ['direct'] }],
        }),
      );
      server = await startBenchServer(
        { POSTHORN_ROUTES: routes, POSTHORN_DNS_SERVERS: net.dns.address, ...env },
        ['api', 'worker'],
      );
      const { key, db } = await readyBenchAccount(server);
      const started = server;
      return {
        server: started,
        db,
        /** Sends `count` messages, the i-th to `to(i)`, through POST /v1/emails/batch. */
        async send(count: number, to: (i: number) => string) {
          for (let b = 0; b < count; b += 100) {
            const batch = Array.from({ length: Math.min(100, count - b) }, (_, i) => ({
              from: 'Bench <onboarding@posthorn.localhost>',
              to: to(b + i),
              subject: `message ${b + i}`,
              text: 'hello',
            }));
            const res = await json(`${started.url}/v1/emails/batch`, 'POST', key, batch);
            if (res.status !== 200) throw new Error(`batch refused: ${JSON.stringify(res.body)}`);
          }
        },
      };
    },
  };
}
