import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * `posthorn worker` in processes of their own, against a test server's database and secret: for
 * tests that kill a worker (SIGKILL, SIGTERM) or run several at once. Each writes its warnings to
 * the test's output; `stopAll` ends those still running.
 */
export function workerProcesses(base: () => { databaseUrl: string; secret: string }) {
  const children: ChildProcess[] = [];
  return {
    /** Starts one worker relaying to `relay`, with `env` over the defaults. */
    start(relay: string, env: Record<string, string> = {}): ChildProcess {
      const { databaseUrl, secret } = base();
      const child = spawn(process.execPath, ['src/main.ts', 'worker'], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          POSTHORN_SECRET: secret,
          POSTHORN_SMTP_RELAY: relay,
          LOG_LEVEL: 'warn',
          ...env,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      children.push(child);
      return child;
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
