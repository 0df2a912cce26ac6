import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FROM } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
let account: SignupResult;
let client: Client;
let configDir: string;

const text = (result: unknown) =>
  ((result as { content: { text: string }[] }).content[0]?.text ?? '') as string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  configDir = mkdtempSync(path.join(tmpdir(), 'posthorn-mcp-'));
  client = new Client({ name: 'posthorn-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [path.join(root, 'bin/posthorn.js'), 'mcp', '--api-url', `${server.url}/v1`],
      env: {
        ...(process.env as Record<string, string>),
        POSTHORN_CONFIG_DIR: configDir,
        POSTHORN_API_KEY: account.project_key.key,
      },
      stderr: 'pipe',
    }),
  );
}, 60_000);
afterAll(async () => {
  await client?.close();
  await server?.close();
  rmSync(configDir, { recursive: true, force: true });
});

describe('posthorn mcp, driven by the SDK’s own Client over stdio', () => {
  it('lists the tools with their input schemas and side effects', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        'add_domain',
        'check_domain',
        'create_contact',
        'get_email',
        'list_domains',
        'list_projects',
        'list_workspaces',
        'login_poll',
        'login_start',
        'logout',
        'send_email',
        'signup',
        'track_event',
        'verify_email',
        'whoami',
      ].sort(),
    );
    const signup = tools.find((t) => t.name === 'signup');
    expect(signup?.description).toMatch(/accept_terms.*own answer/);
    expect(signup?.inputSchema).toMatchObject({
      type: 'object',
      properties: { accept_terms: { type: 'boolean' }, email: { type: 'string' } },
      required: expect.arrayContaining(['email', 'name', 'accept_terms']),
    });
    expect(tools.find((t) => t.name === 'send_email')?.description).toMatch(/side effect/i);
  });

  it('whoami and send_email work against the running server', async () => {
    const me = await client.callTool({ name: 'whoami', arguments: {} });
    expect(me.isError).toBeFalsy();
    expect(JSON.parse(text(me)).project.id).toBe(account.project.id);
    const sent = await client.callTool({
      name: 'send_email',
      arguments: { from: FROM, to: 'mcp-reader@example.org', subject: 'From MCP', text: 'Hello' },
    });
    expect(sent.isError, text(sent)).toBeFalsy();
    const id = JSON.parse(text(sent)).id as string;
    const email = await server.call('GET', `/v1/emails/${id}`, { key: account.project_key.key });
    expect(email.body.subject).toBe('From MCP');
  });

  it('a bad argument is a tool error, not a crash', async () => {
    const refused = await client.callTool({
      name: 'send_email',
      arguments: { from: 'someone@unverified.example', to: 'x@example.org', subject: 'x', text: 'x' },
    });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/not on a verified domain.*\(HTTP 400\)/);
    let schemaError: unknown;
    const wrongType = await client
      .callTool({ name: 'send_email', arguments: { from: FROM, to: 42, subject: 'x' } })
      .catch((err) => {
        schemaError = err;
        return null;
      });
    expect(wrongType?.isError === true || schemaError !== undefined).toBe(true);
    // still serving
    const me = await client.callTool({ name: 'whoami', arguments: {} });
    expect(me.isError).toBeFalsy();
  });
});

describe('posthorn mcp and projects (issue 47, item 5)', () => {
  it('acts in the project of its setting, or of a tool’s `project` argument', async () => {
    // an all-access key whose account has a second project
    const second = (
      await server.call('POST', '/v1/workspaces', { key: account.account_key.key, body: { name: 'Second' } })
    ).body.project.id as string;
    const allAccess = new Client({ name: 'posthorn-test', version: '1.0.0' });
    await allAccess.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          path.join(root, 'bin/posthorn.js'),
          'mcp',
          '--api-url',
          `${server.url}/v1`,
          '--project',
          account.project.id,
        ],
        env: {
          ...(process.env as Record<string, string>),
          POSTHORN_CONFIG_DIR: configDir,
          POSTHORN_API_KEY: account.account_key.key,
        },
        stderr: 'pipe',
      }),
    );
    try {
      const listed = await allAccess.callTool({ name: 'list_projects', arguments: {} });
      expect(
        JSON.parse(text(listed))
          .data.map((p: { id: string }) => p.id)
          .sort(),
      ).toEqual([account.project.id, second].sort());
      // the setting: the sign-up project
      const me = await allAccess.callTool({ name: 'whoami', arguments: {} });
      expect(me.isError, text(me)).toBeFalsy();
      expect(JSON.parse(text(me)).project.id).toBe(account.project.id);
      // the argument: the second project
      const there = await allAccess.callTool({ name: 'whoami', arguments: { project: second } });
      expect(JSON.parse(text(there)).project.id).toBe(second);
      const sent = await allAccess.callTool({
        name: 'send_email',
        arguments: {
          from: FROM,
          to: 'mcp-reader@example.org',
          subject: 'Second',
          text: 'x',
          project: second,
        },
      });
      expect(sent.isError, text(sent)).toBeFalsy();
      const row = await server.runtime.ctx.db
        .selectFrom('emails')
        .select('project_id')
        .where('id', '=', JSON.parse(text(sent)).id)
        .executeTakeFirstOrThrow();
      expect(row.project_id).toBe(second);
      // a project the key does not reach is the API's 404, as a tool error
      const elsewhere = await allAccess.callTool({
        name: 'list_domains',
        arguments: { project: '00000000-0000-4000-8000-000000000000' },
      });
      expect(elsewhere.isError).toBe(true);
      expect(text(elsewhere)).toMatch(/not found \(HTTP 404\)/);
    } finally {
      await allAccess.close();
    }
  }, 60_000);
});
