/**
 * Driving the Resend door with the official `resend` SDK (issues 35 and 51): the newest release
 * (`resend`, pinned) and the one the door was first built against (`resend-6-23`, an npm alias),
 * each against its own server, with only the base URL changed. A test file describes its checks
 * once with `describeSdkRuns` and they run for both releases; methods one release lacks are skipped
 * with `run.has`. Every answer the door gives is recorded, to validate against Resend's OpenAPI
 * description; every method call is recorded as working or not, to count against the methods the
 * SDK's own prototypes list (`sdkMethods`). Files: resend-sdk.test.ts (the door's first resources
 * and templates, topics, contact properties, usage), resend-sdk-more.test.ts (the rest).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Resend } from 'resend';
import { Resend as Resend623 } from 'resend-6-23';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { validateResponse } from './resend-openapi.ts';
import { type SignupResult, startTestServer, type TestServer } from './server.ts';
import type { ReceivedHook } from './webhook-receiver.ts';

export { Resend };

/** The releases every SDK test runs against: the newest first. */
export const SDKS = [
  { version: '6.38.0', Resend, typings: 'resend/index.d.mts' },
  {
    version: '6.23.0',
    Resend: Resend623 as unknown as typeof Resend,
    typings: 'resend-6-23/index.d.mts',
  },
];

export interface Answer {
  method: string;
  path: string;
  status: number;
  body: unknown;
}

export interface SdkRun {
  version: string;
  server: TestServer;
  account: SignupResult;
  /** Resend's full-access key: an all-access Posthorn key, acting in the account's project. */
  key: string;
  resend: Resend;
  /** Another client of the same release, with another key. */
  client(key: string): Resend;
  /** Every method of this release, from its prototypes (see `sdkMethods`). */
  methods: string[];
  has(method: string): boolean;
  /** Each method called: null when it worked, else why not (the first failure is kept). */
  outcomes: Map<string, string | null>;
  answers: Answer[];
  /** Calls one SDK method; it works when the SDK says no error and `check` holds. */
  call<T extends { error: unknown; data: unknown }>(
    name: string,
    run: () => PromiseLike<T>,
    check?: (data: NonNullable<T['data']>) => void,
  ): Promise<NonNullable<T['data']>>;
  /** Calls a method the door refuses: it must answer Resend's 405 `method_not_allowed`. */
  refused(name: string, run: () => PromiseLike<{ error: unknown }>): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Method names the SDK's typings declare private: its helpers, not calls of Resend's API. */
function privateNames(typings: string): Set<string> {
  // the package exports no subpaths: its typings sit beside its entry point
  const [pkg, file] = typings.split('/');
  const text = readFileSync(path.join(path.dirname(require.resolve(pkg)), file), 'utf8');
  return new Set([...text.matchAll(/^\s+private (\w+);$/gm)].map((m) => m[1]));
}

/**
 * Every public method of an SDK client, walked from its resources' prototypes (`emails.send`,
 * `contacts.segments.add`, ...), each resource once (`audiences` is `segments`).
 */
export function sdkMethods(client: object, typings: string): string[] {
  const hidden = privateNames(typings);
  const seen = new Set<object>();
  const out: string[] = [];
  const isResource = (v: unknown): v is object =>
    typeof v === 'object' &&
    v !== null &&
    Object.getPrototypeOf(v) !== Object.prototype &&
    !(v instanceof Headers);
  const walk = (resource: object, prefix: string) => {
    if (seen.has(resource)) return;
    seen.add(resource);
    for (const m of Object.getOwnPropertyNames(Object.getPrototypeOf(resource)))
      if (m !== 'constructor' && !hidden.has(m)) out.push(`${prefix}${m}`);
    for (const [k, v] of Object.entries(resource))
      if (k !== 'resend' && isResource(v)) walk(v, `${prefix}${k}.`);
  };
  for (const [k, v] of Object.entries(client)) if (isResource(v)) walk(v, `${k}.`);
  return out.sort();
}

const runs: { base: string; run: SdkRun }[] = [];

/** Records every answer the door gives an SDK, to the run whose server gave it. */
function recordAnswers() {
  if ((globalThis.fetch as { recording?: boolean }).recording) return;
  const original = globalThis.fetch;
  const recording = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const response = await original(input, init);
    const url = new URL(String(input instanceof Request ? input.url : input));
    const owner = runs.find((r) => url.origin === r.base);
    if (owner && url.pathname.startsWith('/resend/')) {
      const text = await response.clone().text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {}
      owner.run.answers.push({
        method: init?.method ?? 'GET',
        path: url.pathname.slice('/resend'.length),
        status: response.status,
        body,
      });
    }
    return response;
  };
  globalThis.fetch = Object.assign(recording, { recording: true }) as typeof fetch;
}

function record(outcomes: Map<string, string | null>, name: string, why: string | null) {
  // a method called more than once keeps its first failure: a later success does not hide it
  if (!outcomes.get(name)) outcomes.set(name, why);
}

async function startRun(sdk: (typeof SDKS)[number], env: Record<string, string>): Promise<SdkRun> {
  const server = await startTestServer({ POSTHORN_RATE_LIMIT: '1000', ...env });
  const account = await server.signupConfirmed();
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  const key = (
    await createKeyInProject(server.runtime.ctx, { accountId: account.account.id }, account.project.id, {
      name: 'Resend SDK',
      scope: 'all_access',
    })
  ).key as string;
  const resend = new sdk.Resend(key, { baseUrl: `${server.url}/resend` });
  const methods = sdkMethods(resend, sdk.typings);
  const outcomes = new Map<string, string | null>();
  const run: SdkRun = {
    version: sdk.version,
    server,
    account,
    key,
    resend,
    client: (other) => new sdk.Resend(other, { baseUrl: `${server.url}/resend` }),
    methods,
    has: (method) => methods.includes(method),
    outcomes,
    answers: [],
    async call(name, call, check = () => {}) {
      expect(methods, `${name} is not a method of resend ${sdk.version}`).toContain(name);
      const result = await call();
      try {
        expect(result.error, `${name}: ${JSON.stringify(result.error)}`).toBeNull();
        check(result.data as never);
        record(outcomes, name, null);
      } catch (err) {
        record(outcomes, name, (err as Error).message);
      }
      return result.data as never;
    },
    async refused(name, call) {
      expect(methods).toContain(name);
      const { error } = await call();
      expect(error, name).toMatchObject({ statusCode: 405, name: 'method_not_allowed' });
      record(outcomes, name, `405: ${(error as { message: string }).message}`);
    },
  };
  runs.push({ base: new URL(server.url).origin, run });
  return run;
}

/**
 * Describes SDK checks once, run for each release in `SDKS` against a server of its own. `body`
 * gets a getter for the run (set once the server is up).
 */
export function describeSdkRuns(
  title: string,
  body: (run: () => SdkRun) => void,
  opts: { env?: () => Record<string, string>; before?: (run: SdkRun) => Promise<void> } = {},
) {
  recordAnswers();
  for (const sdk of SDKS)
    describe(`${title} (resend ${sdk.version})`, () => {
      let run: SdkRun | undefined;
      beforeAll(async () => {
        run = await startRun(sdk, opts.env?.() ?? {});
        await opts.before?.(run);
      }, 60_000);
      afterAll(async () => {
        await run?.server.close();
      });
      body(() => run as SdkRun);
    });
}

/** The methods of `run` under `prefixes` (`'emails.'`, `'usage.get'`), without those under `except`. */
export function methodsUnder(run: SdkRun, prefixes: string[], except: string[] = []): string[] {
  const under = (m: string, list: string[]) => list.some((p) => m === p || m.startsWith(p));
  return run.methods.filter((m) => under(m, prefixes) && !under(m, except));
}

/**
 * The count: every method listed was called; at least `minRate` of them work unchanged and the
 * rest are exactly `refused` (each answered 405 as the README documents).
 */
export function expectCount(run: SdkRun, methods: string[], refused: string[], minRate = 0.95) {
  expect([...run.outcomes.keys()].filter((m) => methods.includes(m)).sort()).toEqual([...methods].sort());
  const failing = methods.filter((m) => run.outcomes.get(m) !== null);
  const rate = 1 - failing.length / methods.length;
  console.log(
    `resend ${run.version} at /resend: ${methods.length - failing.length} of ${methods.length} methods work unchanged (${(rate * 100).toFixed(1)} %); 405 as documented: ${failing.join(', ') || 'none'}`,
  );
  expect(
    failing.map((m) => `${m}: ${run.outcomes.get(m)}`),
    'the methods that do not work are exactly those answering 405',
  ).toEqual(
    refused
      .filter((m) => methods.includes(m))
      .sort()
      .map((m) => `${m}: ${run.outcomes.get(m)}`),
  );
  for (const m of refused.filter((r) => methods.includes(r))) expect(run.outcomes.get(m)).toMatch(/^405: /);
  expect(rate).toBeGreaterThanOrEqual(minRate);
}

/**
 * Every answer of 2xx validates against Resend's OpenAPI description, and those the description
 * does not describe are exactly `undescribed` (`POST /templates/{id}/duplicate`, ids as `{id}`);
 * every error is Resend's `{statusCode, name, message}`. Returns the operations answered.
 */
export function expectValidAnswers(run: SdkRun, undescribed: string[], only?: (a: Answer) => boolean) {
  const answers = run.answers.filter((a) => only?.(a) ?? true);
  const judged = answers
    .filter((a) => a.status < 300)
    .map((a) => ({ at: `${a.method} ${a.path}`, ...validateResponse(a.method, a.path, a.status, a.body) }));
  const missing = new Set(
    judged.filter((v) => v.operationId === null).map((v) => v.at.replace(/[0-9a-f-]{36}/g, '{id}')),
  );
  expect([...missing].sort()).toEqual([...undescribed].sort());
  expect(judged.filter((v) => v.operationId !== null && v.errors.length > 0)).toEqual([]);
  for (const a of answers.filter((x) => x.status >= 400))
    expect(a.body, `${a.method} ${a.path}`).toEqual({
      statusCode: a.status,
      name: expect.any(String),
      message: expect.any(String),
    });
  return new Set(judged.map((v) => v.operationId).filter(Boolean));
}

/** A webhook delivery checked as a Resend user checks it: the SDK's `webhooks.verify` with Svix's headers only. */
export function verifiedBySvix(resend: Resend, received: ReceivedHook, secret: string) {
  return resend.webhooks.verify({
    payload: received.body,
    headers: {
      id: String(received.headers['svix-id']),
      timestamp: String(received.headers['svix-timestamp']),
      signature: String(received.headers['svix-signature']),
    },
    webhookSecret: secret,
  });
}
