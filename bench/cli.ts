// How long `posthorn whoami` takes from start to answer (issue 48, build item 7: under 1 s after
// the first run), against a running server (what `npm start` runs) on this machine: the command
// once with an empty compile cache (a first run), then BENCH_RUNS times warm, and the median; then
// the same through `npx posthorn` (npm's own start added), unless BENCH_NPX=0.
// Run: npm run bench:cli   (BENCH_RUNS, default 10)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { machine, signupBench, startBenchServer } from './server.ts';

const runs = Number(process.env.BENCH_RUNS ?? 10);
const root = path.resolve(import.meta.dirname, '..');
const scratch = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-cli-'));

let server: Awaited<ReturnType<typeof startBenchServer>> | undefined;
let failed = false;
try {
  // SMTP on ports of its own: another server on this machine may hold the default ones
  server = await startBenchServer({ POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0' });
  const { key } = await signupBench(server);
  // a profile as `posthorn signup` or `login` leaves it
  const configDir = path.join(scratch, 'config');
  mkdirSync(configDir);
  writeFileSync(
    path.join(configDir, 'credentials.json'),
    JSON.stringify({ profiles: { default: { api_url: `${server.url}/v1`, api_key: key } } }),
    { mode: 0o600 },
  );
  const env = { ...process.env, POSTHORN_CONFIG_DIR: configDir, POSTHORN_API_KEY: '' };

  /** One run of `command`: its wall time in ms; a run that fails stops the bench. */
  const time = (command: string, args: string[], extra: Record<string, string> = {}) => {
    const started = performance.now();
    const run = spawnSync(command, args, { cwd: root, env: { ...env, ...extra }, encoding: 'utf8' });
    const ms = performance.now() - started;
    if (run.status !== 0 || !/Can send/.test(run.stdout))
      throw new Error(`${command} ${args.join(' ')} failed (${run.status}):\n${run.stdout}${run.stderr}`);
    return ms;
  };
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  };
  const line = (label: string, values: number[]) =>
    console.log(
      `  ${label.padEnd(30)} median ${median(values).toFixed(0)} ms   (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)}, ${values.length} runs)`,
    );

  // the first run: a compile cache of its own, empty
  const cache = { NODE_COMPILE_CACHE: path.join(scratch, 'compile-cache') };
  const bin = [path.join(root, 'bin/posthorn.js'), 'whoami'];
  const first = time(process.execPath, bin, cache);
  const warm = Array.from({ length: runs }, () => time(process.execPath, bin, cache));
  const npx =
    process.env.BENCH_NPX === '0'
      ? []
      : Array.from({ length: runs + 1 }, () => time('npx', ['posthorn', 'whoami'], cache)).slice(1);

  console.log(
    `posthorn whoami against a running server (posthorn start), ${machine()}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  line('first run (empty compile cache)', [first]);
  line('warm: node bin/posthorn.js', warm);
  if (npx.length) line('warm: npx posthorn', npx);
  const met = median(warm) < 1000;
  console.log(`  target: warm posthorn whoami < 1 s (median of ${runs}): ${met ? 'met' : 'NOT met'}`);
  failed = !met;
} finally {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
