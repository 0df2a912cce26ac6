import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliLogin } from '../helpers/cli-login.ts';
import { eventually } from '../helpers/eventually.ts';
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
    // nine CLI processes, each starting Node: on a loaded 2-core machine that passes 30 s
  }, 90_000);

  it('a bad key gives the server message on stderr and exit code 1', async () => {
    const res = await posthorn(['whoami', '--api-url', `${server.url}/v1`], {
      POSTHORN_API_KEY: 'ph_not_a_key',
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^posthorn: Invalid API key.*\(HTTP 401\)/);
    expect(res.stdout).toBe('');
  });
});

describe('posthorn login: browser pairing', () => {
  /** The browser, over HTTP: cookies kept, forms posted as a browser does. */
  function browser() {
    let cookie = '';
    return {
      async get(pathAndQuery: string) {
        const res = await fetch(`${server.url}${pathAndQuery}`, { headers: cookie ? { cookie } : {} });
        return { status: res.status, html: await res.text() };
      },
      async post(fields: Record<string, string>) {
        const res = await fetch(`${server.url}/pair`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
          body: new URLSearchParams(fields).toString(),
        });
        const set = res.headers.getSetCookie();
        if (set.length > 0) cookie = set.map((c) => c.split(';')[0]).join('; ');
        return { status: res.status, html: await res.text(), setCookies: set };
      },
    };
  }

  it('creates an account in the browser (the pairing code survives it) and the CLI gets a key of the chosen scope', async () => {
    const login = await startCliLogin(`${server.url}/v1`, configDir);
    const { code, exited } = login;
    const url = login.url;
    expect(code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);

    const b = browser();
    const first = await b.get(`${url.pathname}${url.search}`);
    expect(first.status).toBe(200);
    expect(first.html).toContain(code);
    expect(first.html).toMatch(/type="checkbox" name="accept_terms" value="yes">/); // unticked
    expect(first.html).toMatch(/<a href="\/terms"[^>]*>terms of service<\/a>/); // beside the box
    const email = 'paired@example.com';
    const unticked = await b.post({ code, step: 'signup', email, name: 'Paired Person' });
    expect(unticked.status).toBe(400);
    expect(unticked.html).toContain('tick the box');
    const created = await b.post({ code, step: 'signup', email, name: 'Paired Person', accept_terms: 'yes' });
    expect(created.status, created.html).toBe(200);
    expect(created.html).toContain('Enter the code from your email');
    const message = await server.sink.waitFor((m) => m.to.includes(email));
    const loginCode = /code: (\w{6})/.exec(message.parsed.subject ?? '')?.[1] as string;
    const signedIn = await b.post({ code, step: 'login_finish', email, login_code: loginCode });
    expect(signedIn.status, signedIn.html).toBe(200);
    expect(signedIn.html).toContain(code);
    // one email with one code confirmed the address and signed in, the dashboard too (its own cookie)
    const sent = await server.runtime.ctx.db
      .selectFrom('emails')
      .select('subject')
      .where('stream', '=', 'system')
      .where(sql<boolean>`${email} = any(to_addresses)`)
      .execute();
    expect(sent).toEqual([{ subject: message.parsed.subject }]);
    const dashboardCookie = signedIn.setCookies.find((c) => c.startsWith('posthorn_session='));
    for (const part of ['HttpOnly', 'SameSite=Lax', 'Path=/;']) expect(dashboardCookie).toContain(part);
    const dashboardSession = await server.call('GET', '/api/session', {
      headers: { cookie: (dashboardCookie as string).split(';')[0] },
    });
    expect(dashboardSession.body.account).toMatchObject({ email, email_confirmed: true });
    const projectId = /name="scope" value="([0-9a-f-]{36})"/.exec(signedIn.html)?.[1] as string;
    expect(projectId).toBeTruthy();
    // a forged form (no token, or a wrong one, as another site would post) authorises nothing
    const csrf = /name="csrf" value="([^"]+)"/.exec(signedIn.html)?.[1] as string;
    expect(csrf).toBeTruthy();
    expect((await b.post({ code, step: 'authorize', scope: 'all' })).status).toBe(403);
    const wrong = `${csrf.startsWith('A') ? 'B' : 'A'}${csrf.slice(1)}`;
    expect((await b.post({ code, step: 'authorize', scope: 'all', csrf: wrong })).status).toBe(403);
    const done = await b.post({ code, step: 'authorize', scope: projectId, csrf });
    expect(done.html).toContain('the CLI now holds a key');
    expect(done.html).toContain('<a href="/">Open the dashboard</a>'); // the app's path, on this origin

    expect(await exited).toBe(0);
    expect(login.stdout()).toContain('Logged in');
    const stored = JSON.parse(readFileSync(path.join(configDir, 'credentials.json'), 'utf8')).profiles
      .default;
    const me = await server.call('GET', '/v1/me', { key: stored.api_key });
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(projectId);
    // a one-project key: the account API refuses it (403: a valid key where its kind does not reach)
    expect((await server.call('GET', '/v1/workspaces', { key: stored.api_key })).status).toBe(403);
    const keys = await server.runtime.ctx.db
      .selectFrom('api_keys')
      .select(['name', 'scope'])
      .where('id', '=', stored.key_id)
      .executeTakeFirstOrThrow();
    expect(keys).toEqual({ name: expect.stringMatching(/^CLI on /), scope: 'project' });
    // the page is spent: the code cannot be used again
    expect((await b.get(`${url.pathname}${url.search}`)).status).toBe(404);
  }, 40_000);

  it('a denied pairing polls as denied, polling is rate-limited, and an unknown token is 404', async () => {
    const started = await server.call('POST', '/v1/auth/pairings', { body: { device_name: 'test box' } });
    expect(started.status).toBe(200);
    const { code, poll_token: token } = started.body;
    expect((await server.call('GET', `/v1/auth/pairings/${token}`)).body.status).toBe('pending');
    expect((await server.call('GET', `/v1/auth/pairings/${token}`)).status).toBe(429);
    const b = browser();
    expect((await b.post({ code, step: 'deny' })).html).toContain('denied');
    // polls keep being refused until the one-second window has passed; then one is answered
    const answered = await eventually(
      async () => {
        const res = await server.call('GET', `/v1/auth/pairings/${token}`);
        expect(res.status, 'still within the window').not.toBe(429);
        return res;
      },
      { timeoutMs: 5_000, intervalMs: 100, message: 'polling stayed rate-limited' },
    );
    expect(answered.status).toBe(200);
    expect(answered.body.status).toBe('denied');
    expect((await server.call('GET', '/v1/auth/pairings/php_unknown')).status).toBe(404);
  });
});

describe('posthorn domains and keys', () => {
  it('adds, lists and checks a domain; lists, creates, rotates and revokes keys', async () => {
    const acct = await server.signupConfirmed();
    const env = { POSTHORN_API_KEY: acct.account_key.key, POSTHORN_API_URL: `${server.url}/v1` };
    const added = await posthorn(['domains', 'add', 'cli-domain.example'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/Added cli-domain\.example/);
    expect(added.stdout).toMatch(/TXT\s+\S*_domainkey\.cli-domain\.example\s+pending/);
    const listed = JSON.parse((await posthorn(['domains', 'list', '--json'], env)).stdout);
    expect(listed.data.map((d: { name: string }) => d.name)).toEqual(['cli-domain.example']);

    const created = await posthorn(['keys', 'create', acct.project.id, 'deploy bot', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout);
    expect((await server.call('GET', '/v1/me', { key: key.key })).status).toBe(200);
    const keys = await posthorn(['keys', 'list', acct.project.id], env);
    expect(keys.stdout).toMatch(/deploy bot\s+project\s+active/);
    const rotated = JSON.parse((await posthorn(['keys', 'rotate', key.id, '--json'], env)).stdout);
    expect((await server.call('GET', '/v1/me', { key: key.key })).status).toBe(401);
    expect((await server.call('GET', '/v1/me', { key: rotated.key })).status).toBe(200);
    expect((await posthorn(['keys', 'revoke', key.id], env)).code).toBe(0);
    expect((await server.call('GET', '/v1/me', { key: rotated.key })).status).toBe(401);
    const wrong = await posthorn(['keys', 'revoke', '00000000-0000-4000-8000-000000000000'], env);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/not found \(HTTP 404\)/);
  }, 60_000);
});

describe('posthorn and projects (issue 47, item 5)', () => {
  const projectOfEmail = async (id: string) =>
    (
      await server.runtime.ctx.db
        .selectFrom('emails')
        .select('project_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).project_id;
  const send = ['send', '--from', 'onboarding@posthorn.localhost', '--to', 'reader@example.org'];

  it('sends with --project, POSTHORN_PROJECT or the remembered project once the account has two', async () => {
    const api = `${server.url}/v1`;
    const email = 'two-projects@example.com';
    const profile = ['--profile', 'projects'];
    const signup = await posthorn([
      'signup',
      '--email',
      email,
      '--name',
      'Two',
      '--accept-terms',
      '--api-url',
      api,
      ...profile,
    ]);
    expect(signup.code, signup.stderr).toBe(0);
    expect((await posthorn(['verify-email', await server.codeFor(email), ...profile])).code).toBe(0);
    const stored = () =>
      JSON.parse(readFileSync(path.join(configDir, 'credentials.json'), 'utf8')).profiles.projects;
    const first = stored().project_id as string;
    const second = (
      await server.call('POST', '/v1/workspaces', { key: stored().api_key, body: { name: 'Second' } })
    ).body.project.id as string;
    expect(second).toBeTruthy();

    // the key alone (no project named) is asked which project; the CLI says how to choose
    const asked = await posthorn([...send, '--subject', 'Asked', '--text', 'x'], {
      POSTHORN_API_KEY: stored().api_key,
      POSTHORN_API_URL: api,
    });
    expect(asked.code).toBe(1);
    expect(asked.stderr).toMatch(/X-Project-Id` is required.*\(HTTP 400\)\nchoose one with --project/s);

    // the profile remembers the sign-up project
    const remembered = await posthorn([
      ...send,
      '--subject',
      'Remembered',
      '--text',
      'x',
      '--json',
      ...profile,
    ]);
    expect(remembered.code, remembered.stderr).toBe(0);
    expect(await projectOfEmail(JSON.parse(remembered.stdout).id)).toBe(first);
    // --project names the other
    const named = await posthorn([
      ...send,
      '--subject',
      'Named',
      '--text',
      'x',
      '--json',
      '--project',
      second,
      ...profile,
    ]);
    expect(named.code, named.stderr).toBe(0);
    expect(await projectOfEmail(JSON.parse(named.stdout).id)).toBe(second);
    // and POSTHORN_PROJECT
    const byEnv = await posthorn(['whoami', '--json', ...profile], { POSTHORN_PROJECT: second });
    expect(JSON.parse(byEnv.stdout)).toMatchObject({
      project: { id: second },
      project_chosen_by: 'POSTHORN_PROJECT',
    });

    // projects use: remembered with the key, shown by whoami and projects list
    const used = await posthorn(['projects', 'use', second, ...profile]);
    expect(used.code, used.stderr).toBe(0);
    expect(stored().project_id).toBe(second);
    const whoami = await posthorn(['whoami', ...profile]);
    expect(whoami.stdout).toContain(`(${second})`);
    expect(whoami.stdout).toMatch(/Chosen by\s+profile "projects"/);
    const listed = await posthorn(['projects', 'list', ...profile]);
    expect(listed.stdout).toMatch(new RegExp(`^\\*\\s+${second}`, 'm'));
    const unknown = await posthorn(['projects', 'use', '00000000-0000-4000-8000-000000000000', ...profile]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not found \(HTTP 404\)/);
    expect(stored().project_id).toBe(second);
  }, 90_000);

  it('login with an all-access key remembers the project named by --project', async () => {
    const acct = await server.signupConfirmed();
    const second = (
      await server.call('POST', '/v1/workspaces', { key: acct.account_key.key, body: { name: 'Second' } })
    ).body.project.id as string;
    const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-cli-login-'));
    try {
      const login = await startCliLogin(`${server.url}/v1`, dir, ['--project', second]);
      const pair = (fields: Record<string, string>, cookie = '') =>
        fetch(`${server.url}/pair`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
          body: new URLSearchParams({ code: login.code, ...fields }).toString(),
        });
      const since = server.sink.messages.length;
      expect((await pair({ step: 'login_start', email: acct.account.email })).status).toBe(200);
      const message = await server.sink.waitFor(
        (m) => m.to.includes(acct.account.email) && server.sink.messages.indexOf(m) >= since,
      );
      const loginCode = /code: (\w{6})/.exec(message.parsed.subject ?? '')?.[1] as string;
      const signedIn = await pair({ step: 'login_finish', email: acct.account.email, login_code: loginCode });
      const cookie = signedIn.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const csrf = /name="csrf" value="([^"]+)"/.exec(await signedIn.text())?.[1] as string;
      const done = await pair({ step: 'authorize', scope: 'all', csrf }, cookie);
      expect(await done.text()).toContain('the CLI now holds a key');
      expect(await login.exited).toBe(0);
      expect(login.stdout()).toContain(`commands act in project ${second}`);
      const stored = JSON.parse(readFileSync(path.join(dir, 'credentials.json'), 'utf8')).profiles.default;
      expect(stored.project_id).toBe(second);
      const me = await server.call('GET', '/v1/me', {
        key: stored.api_key,
        headers: { 'x-project-id': stored.project_id },
      });
      expect(me.body.project.id).toBe(second);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
