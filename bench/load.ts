import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  tool: string;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  total: number;
  errors: number;
}

function hasWrk(): boolean {
  if (process.env.BENCH_LOADGEN === 'autocannon') return false;
  return spawnSync('wrk', ['--version']).error === undefined;
}

function ms(value: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(value);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

/**
 * Drives HTTP load with wrk (C, cheap on the shared CPU) when it is installed (Debian's `wrk`), or
 * autocannon. Both run a fixed time with a fixed number of connections and stop by themselves.
 */
export async function load(opts: LoadOptions): Promise<LoadResult> {
  if (!hasWrk()) {
    const r = await autocannon({
      url: opts.url,
      method: opts.method ?? 'GET',
      headers: opts.headers,
      body: opts.body,
      connections: opts.connections,
      duration: opts.seconds,
    });
    return {
      tool: 'autocannon',
      rps: r.requests.average,
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      total: r.requests.total,
      errors: r.non2xx + r.errors + r.timeouts,
    };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-wrk-'));
  try {
    const script = path.join(dir, 'request.lua');
    const lua = [
      `wrk.method = ${JSON.stringify(opts.method ?? 'GET')}`,
      ...Object.entries(opts.headers ?? {}).map(
        ([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`,
      ),
      opts.body ? `wrk.body = ${JSON.stringify(opts.body)}` : '',
    ].join('\n');
    writeFileSync(script, lua);
    const out = execFileSync(
      'wrk',
      ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '-s', script, opts.url],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      },
    );
    const percentile = (p: string) => ms(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
    const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    return {
      tool: 'wrk',
      rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
      p50: percentile('50'),
      p90: percentile('90'),
      p99: percentile('99'),
      total,
      errors: non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
