import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * `posthorn worker` in processes of their own, against a test server's database and secret: for
 * tests that kill a worker (SIGKILL, SIGTERM) or run several at once. Each writes its warnings to
 * the test's output, and `output` gives what one has written so far; `stopAll` ends those still
 * running.
 */
export function workerProcesses(base: () => { databaseUrl: string; secret: string }) {
  const children: ChildProcess[] = [];
  const outputs = new Map<ChildProcess, string>();
  return {
    /** Starts one worker relaying to `relay`, with `env` over the defaults. */
    start(relay: string, env: Record<string, string> = {}): ChildProcess {
      const { databaseUrl, secret } = base();
      const child = spawn(process.execPath, ['bin/posthorn.js', 'worker'], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          POSTHORN_SECRET: secret,
          POSTHORN_SMTP_RELAY: relay,
          // domains verified in the database have no DNS for the bulk-sender gate to judge
          POSTHORN_BULK_GATE: 'off',
          LOG_LEVEL: 'warn',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      outputs.set(child, '');
      child.stdout?.on('data', (d: Buffer) => {
        outputs.set(child, outputs.get(child) + d.toString());
        process.stdout.write(d);
      });
      child.stderr?.on('data', (d: Buffer) => {
        outputs.set(child, outputs.get(child) + d.toString());
        process.stderr.write(d);
      });
      children.push(child);
      return child;
    },
    /** What the worker has written to its stdout and stderr so far. */
    output(child: ChildProcess): string {
      return outputs.get(child) ?? '';
    },
    /** Sends `signal` and waits until the process has exited. */
    async stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
    /** Ends every worker still running (after the tests). */
    async stopAll(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
      await Promise.all(children.map((c) => this.stop(c, signal)));
    },
  };
}
