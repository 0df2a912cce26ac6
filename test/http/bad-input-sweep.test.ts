import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import {
  type Answer,
  agent,
  type Json,
  type Operation,
  operationsOf,
  probesFor,
  rawRequest,
  send,
  sweep,
} from '../helpers/sweep.ts';

/**
 * A generated sweep of malformed requests over every operation of GET /v1/openapi.json, with and
 * without a key: no answer may be a 5xx, and every 4xx must be exactly `{"error": "..."}` (402 adds
 * code, feature and upgrade_to). The operations come from the document itself, so a new operation
 * is swept the day it is added; the test also fails if an endpoint the API lists is missing from it.
 */

/** The session's bearer for the dashboard's operations; the all-access key, naming its project, for the rest. */
function authFor(
  o: Operation,
  credentials: { key: string; projectId: string; session: string },
): Record<string, string> {
  const session = (o.op.security ?? []).some((s: Json) => 'sessionAuth' in s);
  // the all-access key names its project: the sweep itself creates projects as it goes
  return session
    ? { authorization: `Bearer ${credentials.session}` }
    : { authorization: `Bearer ${credentials.key}`, 'x-project-id': credentials.projectId };
}

/** What is wrong with an answer, or null. */
function complaint(answer: Answer, binary: boolean): string | null {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (answer.status < 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `status ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`;
  }
  const keys = Object.keys((body as Json) ?? {}).sort();
  const allowed =
    answer.status === 402
      ? ['code', 'error', 'feature', 'upgrade_to']
      : answer.status === 429
        ? ['code', 'error']
        : ['error'];
  if (JSON.stringify(keys) !== JSON.stringify(allowed))
    return `status ${answer.status} with keys ${keys.join(',')}: ${answer.text.slice(0, 200)}`;
  const error = (body as Json).error;
  if (typeof error !== 'string' || error.length === 0 || error.length > 2000)
    return `status ${answer.status} with an error that is not a short string`;
  if (!binary && /\n\s+at .+:\d+:\d+/.test(error)) return 'a stack trace in the error';
  return null;
}

describe('every bad input is a 4xx with exactly {error}', () => {
  let server: TestServer;
  let account: SignupResult;
  let doc: Json;
  let operations: Operation[];
  let credentials: { key: string; projectId: string; session: string };

  beforeAll(async () => {
    server = await startTestServer();
    account = await server.signupConfirmed();
    const since = server.sink.messages.length;
    await server.call('POST', '/api/auth/login', { body: { email: account.account.email } });
    const code = await server.codeFor(account.account.email, since);
    const login = await server.call('POST', '/api/auth/login/verify', {
      body: { email: account.account.email, code },
    });
    expect(login.status).toBe(200);
    credentials = { key: account.account_key.key, projectId: account.project.id, session: login.body.token };
    doc = (await server.call('GET', '/v1/openapi.json')).body;
    operations = operationsOf(doc);
  });
  afterAll(async () => {
    agent.destroy();
    await server?.close();
  });

  it('documents every endpoint the API lists', async () => {
    const index = (await server.call('GET', '/v1/')).body.endpoints as { method: string; path: string }[];
    const documented = new Set(operations.map((o) => `${o.method.toUpperCase()} ${o.path}`));
    const openApiPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, '{$1}');
    const missing = index.map((e) => `${e.method} ${openApiPath(e.path)}`).filter((e) => !documented.has(e));
    expect(missing).toEqual([]);
    expect(operations.length).toBeGreaterThan(50);
  });

  it('answers no generated bad request of any operation with a 5xx or a body other than {error}', async () => {
    const queue = operations.flatMap((o) =>
      probesFor(doc, o, authFor(o, credentials)).map((p) => ({ o, p })),
    );
    const binaryOps = new Set(
      operations
        .filter((o) =>
          Object.keys(o.op.responses?.['200']?.content ?? {}).some((t) => t !== 'application/json'),
        )
        .map((o) => `${o.method} ${o.path}`),
    );
    const { failures, swept } = await sweep(new URL(server.url), queue, (answer, o) =>
      complaint(answer, binaryOps.has(`${o.method} ${o.path}`)),
    );
    expect(failures.slice(0, 40)).toEqual([]);
    // every operation of the document was swept, with and without a key
    for (const o of operations)
      expect(swept.get(`${o.method} ${o.path}`) ?? 0, `${o.method} ${o.path}`).toBeGreaterThanOrEqual(3);
    expect(queue.length).toBeGreaterThan(1000);
  }, 240_000);

  it('answers oversized request lines and headers, and a bad URL, with {error} and without echoing the path', async () => {
    const port = Number(new URL(server.url).port);
    const longLine = await rawRequest(
      port,
      `GET /v1/emails/${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    const bigHeader = await rawRequest(
      port,
      `GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`,
    );
    const badUrl = await send(new URL(server.url), {
      method: 'get',
      path: '/v1/emails/%E0%A4%A',
      headers: {},
      why: '',
    });
    const longParam = await send(new URL(server.url), {
      method: 'get',
      path: `/v1/emails/${'z'.repeat(5000)}`,
      headers: {},
      why: '',
    });
    for (const answer of [longLine, bigHeader, badUrl, longParam]) {
      expect(complaint(answer, false)).toBeNull();
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.text.length).toBeLessThan(300);
    }
    expect(bigHeader.status).toBe(431);
    expect(longParam.status).toBe(414);
    expect(badUrl.status).toBe(400);
    expect(JSON.parse(badUrl.text)).toEqual({ error: expect.stringMatching(/percent-encoded/) });
  });

  it('treats POST and DELETE with Content-Type: application/json and no body as an empty body', async () => {
    const key = account.project_key.key;
    const cancel = await send(new URL(server.url), {
      method: 'post',
      path: `/v1/emails/${randomUUID()}/cancel`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '',
      why: '',
    });
    expect(cancel.status).toBe(404);
    const created = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'empty-body@example.com' },
    });
    expect(created.status).toBe(200);
    const removed = await send(new URL(server.url), {
      method: 'delete',
      path: `/v1/contacts/${created.body.id}`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      why: '',
    });
    expect(removed.status).toBe(204);
    const gone = await server.call('GET', `/v1/contacts/${created.body.id}`, { key });
    expect(gone.status).toBe(404);
  });
});
