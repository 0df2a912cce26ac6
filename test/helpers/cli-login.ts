import { spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * Runs `posthorn login --no-browser` as a subprocess and waits for it to show the pairing code and
 * URL; `exited` resolves with its exit code, `stdout()` gives what it printed so far.
 */
export async function startCliLogin(apiUrl: string, configDir: string) {
  const child = spawn(
    process.execPath,
    [path.join(root, 'bin/posthorn.js'), 'login', '--no-browser', '--api-url', apiUrl],
    {
      env: { ...process.env, POSTHORN_CONFIG_DIR: configDir, POSTHORN_API_KEY: '' },
    },
  );
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  const deadline = Date.now() + 15_000;
  while (!/Open \S+/.test(stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const code = /Your code: (\S+)/.exec(stderr)?.[1];
  const url = /Open (\S+)/.exec(stderr)?.[1];
  if (!code || !url) throw new Error(`posthorn login did not show a code and URL:\n${stderr}`);
  return { code, url: new URL(url), exited, stdout: () => stdout };
}
