import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { operationFor, resendDocument } from '../helpers/resend-openapi.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { type Answer, agent, type Json, type Operation, probesFor, sweep } from '../helpers/sweep.ts';

/**
 * The bad-input sweep of the Resend-compatible door (issue 47): every route the door answers, as the
 * app declares it (app.declaredRoutes()), gets the generated malformed requests of the /v1 sweep, its bodies
 * built from Resend's OpenAPI schema of the same operation; with Resend's full-access key and with
 * a project key. No answer may be a 5xx, and every 4xx must be exactly Resend's error,
 * `{statusCode, name, message}`, with the answer's own status.
 */

/** What is wrong with an answer at the door, or null. */
function complaint(answer: Answer): string | null {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (answer.status < 400) return null;
  let body: Json;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `status ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`;
  }
  const keys = Object.keys(body ?? {}).sort();
  if (JSON.stringify(keys) !== '["message","name","statusCode"]')
    return `status ${answer.status} with keys ${keys.join(',')}: ${answer.text.slice(0, 200)}`;
  if (body.statusCode !== answer.status) return `statusCode ${body.statusCode} in a ${answer.status}`;
  if (typeof body.name !== 'string' || !/^[a-z_]+$/.test(body.name)) return `name ${body.name}`;
  if (typeof body.message !== 'string' || body.message.length === 0 || body.message.length > 2000)
    return `status ${answer.status} with a message that is not a short string`;
  if (/\n\s+at .+:\d+:\d+/.test(body.message)) return 'a stack trace in the message';
  return null;
}

/** The door's routes as operations: `{id}` placeholders, Resend's description of the same operation. */
function doorOperations(server: TestServer): Operation[] {
  const doc = resendDocument();
  const door = server.app
    .declaredRoutes()
    .filter((r) => r.url.startsWith('/resend/') && !r.url.includes('*') && r.method !== 'HEAD');
  return door.map(({ method, url }) => {
    const template = url.slice('/resend'.length).replace(/:(\w+)/g, '{$1}');
    const described = operationFor(method, template.replace(/\{\w+\}/g, 'x'));
    const op = described ? doc.paths[described.template][method.toLowerCase()] : {};
    return { method: method.toLowerCase(), path: template, op };
  });
}

describe('every bad input at the Resend door is a 4xx in Resend’s error shape', () => {
  let server: TestServer;
  let account: SignupResult;
  let allAccess: string;

  beforeAll(async () => {
    server = await startTestServer();
    account = await server.signupConfirmed();
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    allAccess = (
      await createKeyInProject(server.runtime.ctx, { accountId: account.account.id }, account.project.id, {
        name: 'sweep',
        scope: 'all_access',
      })
    ).key as string;
  }, 60_000);
  afterAll(async () => {
    agent.destroy();
    await server?.close();
  });

  it('answers no generated bad request of any door route with a 5xx or another error shape', async () => {
    const doc = resendDocument();
    const operations = doorOperations(server);
    // the door answers Resend's resources: emails, domains, keys, audiences, contacts, segments,
    // broadcasts, webhooks (and refuses the rest by name)
    expect(operations.length).toBeGreaterThan(40);
    const keys = [allAccess, account.project_key.key];
    const queue = operations.flatMap((o) =>
      keys.flatMap((key) =>
        probesFor(doc, o, { authorization: `Bearer ${key}` }, '/resend').map((p) => ({ o, p })),
      ),
    );
    const { failures, swept } = await sweep(new URL(server.url), queue, complaint);
    expect(failures.slice(0, 40)).toEqual([]);
    for (const o of operations)
      expect(swept.get(`${o.method} ${o.path}`) ?? 0, `${o.method} ${o.path}`).toBeGreaterThanOrEqual(6);
    expect(queue.length).toBeGreaterThan(1000);
  }, 240_000);
});
