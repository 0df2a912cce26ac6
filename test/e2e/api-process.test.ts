import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * One `posthorn api` process, from outside: what it loads, and when.
 *
 * `posthorn` turns on Node's compile cache (bin/posthorn.js) and hands it to its template threads:
 * from the second start on, the process and each thread read the sources already type-stripped
 * (and so never load the TypeScript stripper, ~17 MB each). Node says what it reads from the
 * cache when NODE_DEBUG_NATIVE=COMPILE_CACHE is set; these tests read that.
 */

const root = path.resolve(import.meta.dirname, '../..');
const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ name }}</mj-text></mj-column></mj-section></mj-body></mjml>';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let cacheDir: string;
let dataDir: string;

beforeAll(async () => {
  database = await createTestDatabase();
  cacheDir = mkdtempSync(path.join(tmpdir(), 'posthorn-compile-cache-'));
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-compile-cache-data-'));
});

afterAll(async () => {
  await database?.drop();
  rmSync(cacheDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

/** Node's line for a TypeScript source read already stripped from the cache. */
const strippedFromCache = (file: string) =>
  new RegExp(
    `retrieving transpile cache for StrippedTypeScript file://\\S*/${file.replace('.', '\\.')}\\.\\.\\.success`,
  );

/**
 * `posthorn api` on the test's database with `env`, while `during` runs (given the API's URL and
 * what the process has written so far); stopped with SIGTERM after. Returns all it wrote.
 */
async function withApi(
  env: Record<string, string | undefined>,
  during: (url: string, output: () => string) => Promise<void>,
): Promise<string> {
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(process.execPath, ['bin/posthorn.js', 'api'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      POSTHORN_SECRET: 'api-process-test-secret-0123456789abcdef',
      POSTHORN_DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const url = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: 'the API did not get ready',
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${output.slice(-4000)}`);
    });
    await during(url, () => output);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return output;
}

/** Signs up and creates a template (MJML and Liquid: both template threads run). */
async function createTemplate(url: string) {
  const signup = await fetch(`${url}/v1/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `cache-${randomUUID()}@example.com`, name: 'Cache', accept_terms: true }),
  });
  const account = (await signup.json()) as { project_key: { key: string } };
  expect(signup.status, JSON.stringify(account)).toBe(200);
  const made = await fetch(`${url}/v1/templates`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.project_key.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `welcome-${randomUUID()}`,
      subject: 'Hi {{ name }}',
      mjml: MJML,
      variables: [{ name: 'name', type: 'string' }],
    }),
  });
  expect(made.status, await made.text()).toBe(200);
}

describe("Node's compile cache", () => {
  it('a second start reads the program and its template threads from the cache', async () => {
    // where bin/posthorn.js puts it by default: in the temporary folder (this test's own)
    const env = { TMPDIR: cacheDir, NODE_COMPILE_CACHE: undefined };
    const first = await withApi(env, createTemplate);
    expect(first).toMatch(/\[compile cache\]/);
    // one folder for this Node version
    expect(readdirSync(path.join(cacheDir, 'node-compile-cache'))).toHaveLength(1);
    const second = await withApi(env, createTemplate);
    expect(second).toMatch(strippedFromCache('src/main.ts'));
    expect(second).toMatch(strippedFromCache('render-worker.ts'));
    expect(second).toMatch(strippedFromCache('mjml-worker.ts'));
  }, 120_000);

  it('is off with NODE_DISABLE_COMPILE_CACHE=1', () => {
    const run = spawnSync(process.execPath, ['bin/posthorn.js', '--help'], {
      cwd: root,
      env: {
        ...process.env,
        NODE_COMPILE_CACHE: '',
        NODE_DISABLE_COMPILE_CACHE: '1',
        NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
      },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Usage: posthorn/);
    expect(run.stderr).not.toMatch(/reading cache from/);
  });
});

describe('the API docs page', () => {
  it('loads its package (Scalar) on the first request to /v1/docs, not at start', async () => {
    const scalarLoaded = /file:\/\/\S*node_modules\/@scalar\/fastify-api-reference\//;
    await withApi({}, async (url, output) => {
      const before = await fetch(`${url}/v1/openapi.json`);
      expect(before.status).toBe(200);
      expect(output()).toMatch(/\[compile cache\]/);
      expect(output()).not.toMatch(scalarLoaded);

      const page = await fetch(`${url}/v1/docs`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      expect(html).toContain('Posthorn API');
      expect(output()).toMatch(scalarLoaded);
      // the page's script, from this server
      const script = html.match(/src="([^"]*scalar\.js)"/)?.[1];
      expect(script, html.slice(0, 2000)).toBeDefined();
      const js = await fetch(new URL(script as string, `${url}/v1/docs/`));
      expect(js.status).toBe(200);
      expect(js.headers.get('content-type')).toMatch(/javascript/);
      expect((await js.text()).length).toBeGreaterThan(1_000_000);
      // a path the page does not have is the API's 404
      const missing = await fetch(`${url}/v1/docs/nothing-here`);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toHaveProperty('error');
    });
  }, 120_000);
});
