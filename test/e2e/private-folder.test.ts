import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { movedDataDir } from '../../src/db/embedded-place.ts';
import { eventually } from '../helpers/eventually.ts';
import { programPid } from '../helpers/npm-start.ts';

const root = path.resolve(import.meta.dirname, '../..');
const asRoot = process.getuid?.() === 0;

// Issue 30, item 7: a fresh clone in a folder only root can enter (/root/posthorn, a `mktemp -d`).
// The embedded PostgreSQL runs as the postgres user there, which could reach neither its binaries
// nor its data: `npm start` and `npm test` died with spawn EACCES.
describe.skipIf(!asRoot)(
  'a clone in a mode-0700 folder, as root (skipped unless the tests run as root)',
  () => {
    let folder: string;
    let clone: string;
    let output = '';
    let child: ChildProcess | undefined;

    /** The environment a person has in a new shell: none of this run's databases, ports or vitest's state. */
    function personEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
      const env: NodeJS.ProcessEnv = {};
      for (const [name, value] of Object.entries(process.env))
        if (!/^(VITEST|npm_|POSTHORN_|TEST_DATABASE_URL$|DATABASE_URL$|NODE_ENV$|PORT$)/.test(name))
          env[name] = value;
      return { ...env, ...extra };
    }

    beforeAll(() => {
      folder = mkdtempSync(path.join(tmpdir(), 'posthorn-private-'));
      expect(statSync(folder).mode & 0o777).toBe(0o700);
      clone = path.join(folder, 'posthorn');
      execFileSync('git', ['clone', '--quiet', root, clone]);
      // node_modules as `npm install` leaves it, inside the folder: hard links are a copy in seconds
      // (a symlink would put the binaries back where the postgres user can reach them)
      try {
        execFileSync('cp', ['-al', path.join(root, 'node_modules'), path.join(clone, 'node_modules')]);
      } catch {
        execFileSync('cp', ['-a', path.join(root, 'node_modules'), path.join(clone, 'node_modules')]);
      }
    }, 120_000);

    afterAll(() => {
      if (child?.exitCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
      if (!folder) return;
      rmSync(folder, { recursive: true, force: true });
      rmSync(movedDataDir(path.join(clone, '.posthorn')), { recursive: true, force: true });
    });

    it('npm start serves /healthz and stops with 0 on SIGTERM', async () => {
      const port = await freePort();
      child = spawn('npm', ['start'], {
        cwd: clone,
        env: personEnv({
          PORT: String(port),
          POSTHORN_SMTP_PORT: String(await freePort()),
          POSTHORN_MX_PORT: String(await freePort()),
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so a failed test can end all of it
      });
      child.stdout?.on('data', (d) => (output += d));
      child.stderr?.on('data', (d) => (output += d));
      const exited = new Promise<number | null>((resolve) => child?.on('exit', (code) => resolve(code)));

      await eventually(
        async () => {
          if (child?.exitCode !== null) throw new Error(`npm start exited (${child?.exitCode}):\n${output}`);
          const res = await fetch(`http://127.0.0.1:${port}/healthz`);
          expect(res.status).toBe(200);
        },
        { timeoutMs: 150_000, intervalMs: 250, message: 'npm start did not answer /healthz' },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${output}`);
      });
      expect(output).not.toContain('EACCES');
      // the start-up says where the binaries and the data went, and why
      expect(output).toContain('the postgres user cannot reach');
      expect(output).toContain(movedDataDir(path.join(clone, '.posthorn')));

      // SIGTERM to the program, as a service manager sends it (npm itself answers a signal by dying of
      // it once its script has ended); npm exits with the program's code
      process.kill(programPid(child.pid as number), 'SIGTERM');
      expect(await exited).toBe(0);
      expect(output).toMatch(/stopped/);
    }, 180_000);

    it('npx vitest runs an integration test file there on the embedded PostgreSQL', () => {
      let result = '';
      try {
        result = execFileSync('npx', ['vitest', 'run', 'test/http/health-metrics.test.ts'], {
          cwd: clone,
          env: personEnv({ NO_COLOR: '1' }),
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 170_000,
        });
      } catch (err) {
        const failed = err as { stdout?: string; stderr?: string };
        throw new Error(`npx vitest failed:\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
      }
      expect(result).toMatch(/Test Files\s+1 passed/);
    }, 180_000);
  },
);
