import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createKeyInProject } from '../../src/domain/keys/service.ts';
import { operationFor, resendDocument } from '../helpers/resend-openapi.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { type Answer, agent, type Json, type Operation, probesFor, send, sweep } from '../helpers/sweep.ts';

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

  it('writes nothing on a bad request to the writes of templates, topics, contact properties, imports, broadcast copies', async () => {
    const doc = resendDocument();
    const key = account.project_key.key;
    const writes = doorOperations(server).filter(
      (o) =>
        o.method !== 'get' &&
        /^\/(templates|topics|contact-properties|contacts\/imports|contacts\/\{id\}\/topics|broadcasts\/\{id\}\/duplicate)/.test(
          o.path,
        ),
    );
    expect(writes.length).toBeGreaterThanOrEqual(12);
    const ctx = server.runtime.ctx;
    // what these writes could change, in one value
    const state = async () =>
      (
        await sql<{ state: string }>`select md5(concat_ws('|',
          (select string_agg(concat(id, name, subject, updated_at, latest_version), ',' order by id) from templates),
          (select count(*) from template_versions),
          (select string_agg(concat(id, name, description, visibility, updated_at), ',' order by id) from topics),
          (select string_agg(concat(contact_id, topic_id, subscribed), ',' order by contact_id, topic_id) from contact_topics),
          (select string_agg(concat(id, properties::text, updated_at), ',' order by id) from contacts),
          (select count(*) from imports), (select count(*) from campaigns), (select count(*) from lists))) as state`.execute(
          ctx.db,
        )
      ).rows[0].state;
    // real rows for the probes' ids, so a refused write had something to change (made again if a probe removed one)
    const seeds = async () => {
      const v1 = (method: string, path: string, body: Json) => server.call(method, path, { key, body });
      const template = await v1('POST', '/v1/templates', {
        name: `Seed ${Date.now()}`,
        subject: 'S',
        html: '<p>x</p>',
      });
      const topic = await v1('POST', '/v1/topics', {
        name: `Seed ${Date.now()}`,
        default_subscription: 'opt_in',
      });
      const contact = await v1('POST', '/v1/contacts', {
        email: `seed${Date.now()}@sweep.example`,
        properties: { plan: 'pro' },
      });
      const list = await v1('POST', '/v1/lists', { name: `Seed ${Date.now()}` });
      return {
        template: template.body.id,
        topic: topic.body.id,
        contact: contact.body.id,
        list: list.body.id,
      };
    };
    let ids = await seeds();
    const idFor = (path: string) =>
      path.startsWith('/templates')
        ? ids.template
        : path.startsWith('/topics')
          ? ids.topic
          : path.startsWith('/contact-properties')
            ? 'plan'
            : path.startsWith('/contacts')
              ? ids.contact
              : ids.list;
    const failures: string[] = [];
    let probes = 0;
    for (const o of writes)
      for (const p of probesFor(doc, o, { authorization: `Bearer ${key}` }, '/resend')) {
        // the probe's own id, unless the probe is about the id
        const path = p.why.startsWith('path ')
          ? p.path
          : p.path.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, idFor(o.path));
        const before = await state();
        const answer = await send(new URL(server.url), { ...p, path });
        probes++;
        const wrong = complaint(answer);
        if (wrong) failures.push(`${o.method} ${o.path} (${p.why}): ${wrong}`);
        if (answer.status >= 400 && (await state()) !== before)
          failures.push(`${o.method} ${o.path} (${p.why}): a ${answer.status} that wrote`);
        if (answer.status < 300) ids = await seeds();
      }
    expect(failures.slice(0, 20)).toEqual([]);
    expect(probes).toBeGreaterThan(200);
  }, 240_000);

  it('writes nothing on a bad request to the writes of events, automations, suppressions, webhook secrets and events', async () => {
    const doc = resendDocument();
    const key = account.project_key.key;
    const writes = doorOperations(server).filter(
      (o) =>
        o.method !== 'get' &&
        /^\/(events|automations|suppressions|webhooks\/\{id\}\/(signing-secret|events))/.test(o.path),
    );
    expect(writes.length).toBeGreaterThanOrEqual(14);
    const ctx = server.runtime.ctx;
    // what these writes could change, in one value
    const state = async () =>
      (
        await sql<{ state: string }>`select md5(concat_ws('|',
          (select count(*) from events), (select count(*) from contacts),
          (select string_agg(concat(id, name, status, version, updated_at), ',' order by id) from flows),
          (select count(*) from flow_versions), (select count(*) from flow_enrollments),
          (select string_agg(concat(email, reason), ',' order by email) from suppressions),
          (select string_agg(concat(id, secret_enc::text, updated_at), ',' order by id) from webhook_endpoints),
          (select count(*) from webhook_deliveries))) as state`.execute(ctx.db)
      ).rows[0].state;
    // real rows for the probes' ids, so a refused write had something to change (made again if a probe removed one)
    const seeds = async () => {
      const v1 = (method: string, path: string, body: Json) => server.call(method, path, { key, body });
      const flow = await v1('POST', '/v1/flows', {
        name: `Seed ${Date.now()}`,
        trigger: { type: 'event', event: 'seeded' },
        steps: [{ type: 'wait', duration_seconds: 60 }],
      });
      const email = `seed${Date.now()}@sweep.example`;
      await v1('POST', '/v1/suppressions', { email });
      const hook = await v1('POST', '/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        events: ['contact.created'],
      });
      return { flow: flow.body.id, suppression: email, webhook: hook.body.id };
    };
    let ids = await seeds();
    expect(ids.webhook, 'a webhook endpoint to probe').toBeTruthy();
    const idFor = (path: string) =>
      path.startsWith('/automations')
        ? ids.flow
        : path.startsWith('/suppressions')
          ? ids.suppression
          : ids.webhook;
    const failures: string[] = [];
    let probes = 0;
    for (const o of writes)
      for (const p of probesFor(doc, o, { authorization: `Bearer ${key}` }, '/resend')) {
        // the probe's own id, unless the probe is about the id
        const path = p.why.startsWith('path ')
          ? p.path
          : p.path.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, idFor(o.path));
        const before = await state();
        const answer = await send(new URL(server.url), { ...p, path });
        probes++;
        const wrong = complaint(answer);
        if (wrong) failures.push(`${o.method} ${o.path} (${p.why}): ${wrong}`);
        if (answer.status >= 400 && (await state()) !== before)
          failures.push(`${o.method} ${o.path} (${p.why}): a ${answer.status} that wrote`);
        if (answer.status < 300) ids = await seeds();
      }
    expect(failures.slice(0, 20)).toEqual([]);
    expect(probes).toBeGreaterThan(150);
  }, 240_000);
});
