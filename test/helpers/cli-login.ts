import { spawn } from 'node:child_process';
import path from 'node:path';
import { eventually } from './eventually.ts';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * Runs `posthorn login --no-browser` as a subprocess and waits for it to show the pairing code and
 * URL (`args` are more options of `login`); `exited` resolves with its exit code, `stdout()` gives
 * what it printed so far.
 */
export async function startCliLogin(apiUrl: string, configDir: string, args: string[] = []) {
  const child = spawn(
    process.execPath,
    [path.join(root, 'bin/posthorn.js'), 'login', '--no-browser', '--api-url', apiUrl, ...args],
    {
      env: { ...process.env, POSTHORN_CONFIG_DIR: configDir, POSTHORN_API_KEY: '' },
    },
  );
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  const { code, url } = await eventually(
    () => {
      const code = /Your code: (\S+)/.exec(stderr)?.[1];
      const url = /Open (\S+)/.exec(stderr)?.[1];
      if (!code || !url) throw new Error(`it printed:\n${stderr}`);
      return { code, url: new URL(url) };
    },
    { timeoutMs: 15_000, message: 'posthorn login did not show a code and URL' },
  );
  return { code, url, exited, stdout: () => stdout };
}
