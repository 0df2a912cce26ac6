import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGeneratedClient } from '../helpers/generated-client.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The OpenAPI document declares `X-Project-Id` on every project-API operation, so a client generated
 * from it (openapi-typescript + openapi-fetch, as in openapi-clients.test.ts) can choose the project
 * with an all-access key that reaches several.
 */

let server: TestServer;
let account: SignupResult;
let second: { id: string; name: string };
let doc: Record<string, any>;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  const created = await server.call('POST', '/v1/projects', {
    key: account.account_key.key,
    body: { name: 'Second', workspace_id: account.workspace.id },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  second = created.body;
  doc = (await server.call('GET', '/v1/openapi.json')).body;
});
afterAll(() => server?.close());

type Operation = { parameters?: { in: string; name: string; required?: boolean; schema?: any }[] };
const operation = (method: string, p: string): Operation =>
  doc.paths[p.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
const projectHeader = (op: Operation) =>
  (op.parameters ?? []).find((q) => q.in === 'header' && q.name.toLowerCase() === 'x-project-id');

describe('X-Project-Id in the OpenAPI document', () => {
  it('is an optional header of every project-API operation, and of no other', async () => {
    const index = (await server.call('GET', '/v1/')).body;
    const endpoints = index.endpoints as { method: string; path: string; auth: string }[];
    const documented = endpoints.filter((e) => e.path.startsWith('/v1/') && operation(e.method, e.path));
    const project = documented.filter((e) => e.auth === 'project');
    expect(project.length).toBeGreaterThan(50);
    for (const e of project) {
      const header = projectHeader(operation(e.method, e.path));
      expect(header, `${e.method} ${e.path}`).toBeDefined();
      expect(header?.required ?? false, `${e.method} ${e.path}`).toBe(false);
      expect(header?.schema).toMatchObject({ type: 'string', format: 'uuid' });
    }
    for (const e of documented.filter((x) => x.auth !== 'project'))
      expect(projectHeader(operation(e.method, e.path)), `${e.method} ${e.path}`).toBeUndefined();
  });

  it('the server still answers as before: the header chooses, its absence with several projects is a 400', async () => {
    const key = account.account_key.key;
    const without = await server.call('GET', '/v1/me', { key });
    expect(without.status).toBe(400);
    expect(without.body.error).toMatch(/X-Project-Id/);
    const chosen = await server.call('GET', '/v1/me', { key, headers: { 'x-project-id': second.id } });
    expect(chosen.status).toBe(200);
    expect(chosen.body.project.id).toBe(second.id);
  });
});

describe('a generated client chooses the project', () => {
  it('compiles a call that names X-Project-Id and acts in that project with an all-access key', async () => {
    const result = await runGeneratedClient(
      doc,
      `import createClient from 'openapi-fetch';
import type { paths } from './api.d.ts';

const [baseUrl, key, first, second] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } });

const inFirst = await client.GET('/v1/me', { params: { header: { 'X-Project-Id': first } } });
const inSecond = await client.GET('/v1/me', { params: { header: { 'X-Project-Id': second } } });
const created = await client.POST('/v1/contacts', {
  params: { header: { 'X-Project-Id': second } },
  body: { email: 'chosen@example.org' },
});
const listed = await client.GET('/v1/contacts', { params: { header: { 'X-Project-Id': second } } });
const elsewhere = await client.GET('/v1/contacts', { params: { header: { 'X-Project-Id': first } } });
console.log(JSON.stringify({
  first: inFirst.data?.project?.id, second: inSecond.data?.project?.id,
  created: created.response.status,
  inSecond: listed.data?.total, inFirst: elsewhere.data?.total,
}));
`,
      [server.url, account.account_key.key, account.project.id, second.id],
    );
    expect(result).toEqual({
      first: account.project.id,
      second: second.id,
      created: 200,
      inSecond: 1,
      inFirst: 0,
    });
  }, 90_000);
});
