import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { type RoleName, type Runtime, startRuntime } from '../../src/runtime.ts';
import { createTestDatabase } from './database.ts';
import { codeIn, type SmtpSink, startSmtpSink } from './smtp-sink.ts';

export interface TestServer {
  runtime: Runtime;
  /** The database this server uses (for a second process on the same data). */
  databaseUrl: string;
  app: FastifyInstance;
  sink: SmtpSink;
  url: string;
  /** Calls the API through the listening socket; JSON in, JSON out. */
  call(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Signs up a fresh account (unique email) and returns the signup response. */
  signup(overrides?: { email?: string; name?: string }): Promise<SignupResult>;
  /** Signs up and confirms the email with the code read from the SMTP sink. */
  signupConfirmed(overrides?: { email?: string; name?: string }): Promise<SignupResult>;
  /** The newest code emailed to an address. */
  codeFor(email: string, since?: number): Promise<string>;
  close(): Promise<void>;
}

export interface SignupResult {
  account: { id: string; email: string };
  workspace: { id: string };
  project: { id: string; name: string };
  project_key: { id: string; key: string };
  account_key: { id: string; key: string };
}

let counter = 0;

/** The real program wired as `posthorn start` does it (API + worker), on a fresh database and an SMTP sink. */
export async function startTestServer(
  env: Record<string, string> = {},
  roles: RoleName[] = ['api', 'worker'],
): Promise<TestServer> {
  const database = await createTestDatabase();
  const sink = await startSmtpSink();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-test-'));
  const config = loadConfig({
    DATABASE_URL: database.url,
    POSTHORN_DATA_DIR: dataDir,
    PORT: '0',
    POSTHORN_SMTP_RELAY: sink.url,
    POSTHORN_RATE_LIMIT: '0',
    // tests sign many accounts up from 127.0.0.1; test/http/signup-limits.test.ts sets its own
    POSTHORN_SIGNUP_LIMIT: '0',
    POSTHORN_PG_POOL_SIZE: '6',
    // in all: 2 of them kept for transactional deliveries, 1 for the event path, 3 for every job
    POSTHORN_WORKER_CONCURRENCY: '6',
    // the spec's Free plan and its 402s, as on a server that sells plans (the default is unlimited)
    POSTHORN_DEFAULT_PLAN: 'free',
    // the bulk-sender gate judges live DNS: tests of campaigns and flows on domains verified in the
    // database have none; the gate's own tests turn it on (test/http/bulk-gate.test.ts)
    POSTHORN_BULK_GATE: 'off',
    LOG_LEVEL: 'warn',
    ...env,
  });
  const runtime = await startRuntime(config, roles);
  const url = runtime.url as string;
  const server: TestServer = {
    runtime,
    databaseUrl: database.url,
    app: runtime.app as FastifyInstance,
    sink,
    url,
    async call(method, p, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${url}${p}`, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async signup(overrides = {}) {
      counter++;
      const email = overrides.email ?? `user${counter}-${Date.now().toString(36)}@example.com`;
      const res = await server.call('POST', '/v1/signup', {
        body: { email, name: overrides.name ?? `User ${counter}`, accept_terms: true },
      });
      if (res.status !== 200) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as SignupResult;
    },
    async codeFor(email, since = 0) {
      // the code goes out through a job: on a busy machine the worker (perhaps a process just
      // started) takes its time
      const message = await sink.waitFor(
        (m) => m.to.includes(email) && sink.messages.indexOf(m) >= since,
        60_000,
      );
      const all = sink.messages.filter((m) => m.to.includes(email));
      return codeIn(all[all.length - 1] ?? message);
    },
    async signupConfirmed(overrides = {}) {
      const result = await server.signup(overrides);
      const code = await server.codeFor(result.account.email);
      const res = await server.call('POST', '/v1/auth/verify-email/code', {
        key: result.project_key.key,
        body: { code },
      });
      if (res.status !== 200) throw new Error(`verify failed: ${res.status} ${JSON.stringify(res.body)}`);
      return result;
    },
    async close() {
      await runtime.stop();
      await sink.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/**
 * Signs up with the account confirmed in the database rather than by its emailed code, for a
 * server whose relay will not carry that email (down, refusing, or a relay of the test's own).
 */
export async function signupConfirmedInDatabase(
  server: TestServer,
  overrides: { email?: string } = {},
): Promise<SignupResult> {
  const account = await server.signup(overrides);
  await server.runtime.ctx.db
    .updateTable('accounts')
    .set({ email_confirmed_at: new Date() })
    .where('id', '=', account.account.id)
    .execute();
  return account;
}

/**
 * A sender with nothing in its way: confirmed in the database (its code email need not arrive) and
 * on the unlimited plan (no daily cap on the shared domain).
 */
export async function unlimitedSender(server: TestServer, overrides: { email?: string } = {}) {
  const account = await signupConfirmedInDatabase(server, overrides);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  return account;
}

/**
 * A confirmed account ready for marketing mail: its workspace on the Starter plan (flows and
 * campaigns) and the footer's postal address that marketing messages carry.
 */
export async function marketingAccount(server: TestServer, address: string): Promise<SignupResult> {
  const account = await server.signupConfirmed();
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  const footer = await server.call('PATCH', '/v1/me/footer', {
    key: account.project_key.key,
    body: { address },
  });
  if (footer.status !== 200) throw new Error(`footer: ${footer.status} ${JSON.stringify(footer.body)}`);
  return account;
}
