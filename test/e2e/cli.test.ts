import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
let configDir: string;

/** Runs the real `posthorn` binary as a subprocess. */
function posthorn(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(root, 'bin/posthorn.js'), ...args],
      {
        cwd: root,
        env: { ...process.env, POSTHORN_CONFIG_DIR: configDir, POSTHORN_API_KEY: '', ...env },
        timeout: 30_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  server = await startTestServer();
  configDir = mkdtempSync(path.join(tmpdir(), 'posthorn-cli-'));
});
afterAll(async () => {
  await server?.close();
  rmSync(configDir, { recursive: true, force: true });
});

describe('the posthorn command', () => {
  it('signup -> verify-email -> whoami -> workspaces list -> logout', async () => {
    const api = `${server.url}/v1`;
    const email = 'cli-user@example.com';
    const refused = await posthorn(['signup', '--email', email, '--name', 'Cli User', '--api-url', api]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--accept-terms');

    const signup = await posthorn([
      'signup',
      '--email',
      email,
      '--name',
      'Cli User',
      '--accept-terms',
      '--api-url',
      api,
    ]);
    expect(signup.code, signup.stderr).toBe(0);
    expect(signup.stdout).toContain(`Account created for ${email}`);
    const file = path.join(configDir, 'credentials.json');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const code = await server.codeFor(email);
    const verified = await posthorn(['verify-email', code]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain('Email confirmed');

    const whoami = await posthorn(['whoami']);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.stdout).toMatch(/Can send\s+yes/);
    expect(whoami.stdout).toMatch(/Default from\s+onboarding@posthorn\.localhost/);
    const json = await posthorn(['whoami', '--json']);
    const me = JSON.parse(json.stdout);
    expect(me.sending).toMatchObject({ ready: true, email_confirmed: true });

    const list = await posthorn(['workspaces', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PLAN\s+ROLE$/);
    const listJson = JSON.parse((await posthorn(['workspaces', 'list', '--json'])).stdout);
    expect(listJson.data).toHaveLength(1);

    const stored = JSON.parse(readFileSync(file, 'utf8')).profiles.default.api_key as string;
    expect((await server.call('GET', '/v1/me', { key: stored })).status).toBe(200);
    const logout = await posthorn(['logout', '--revoke']);
    expect(logout.code, logout.stderr).toBe(0);
    expect(existsSync(file)).toBe(false);
    const after = await posthorn(['whoami']);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('not logged in');
    // the key was revoked on the server too
    expect((await server.call('GET', '/v1/me', { key: stored })).status).toBe(401);
  });

  it('a bad key gives the server message on stderr and exit code 1', async () => {
    const res = await posthorn(['whoami', '--api-url', `${server.url}/v1`], {
      POSTHORN_API_KEY: 'ph_not_a_key',
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^posthorn: Invalid API key.*\(HTTP 401\)/);
    expect(res.stdout).toBe('');
  });
});
