import { hostname } from 'node:os';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { loadProfile, removeProfile, saveProfile } from '../cli/credentials.ts';
import { chooseProjectAfterLogin } from '../cli/projects.ts';
import { ApiError, PosthornClient } from '../sdk/client.ts';

const DEFAULT_URL = 'http://localhost:3000/v1';

type ToolResult = { content: { type: 'text'; text: string }[]; isError?: boolean };

/** The optional argument of every tool that acts in a project. */
const project = z
  .string()
  .optional()
  .describe(
    'the project id to act in, for a key that reaches several projects (see list_projects); default: the server’s setting (--project, POSTHORN_PROJECT, or the project remembered at login)',
  );

/**
 * The MCP tool server (`posthorn mcp`, stdio): the same API through the same SDK and the same
 * credentials file as the CLI. Every failure comes back as a tool error with the API's message.
 * The project a tool acts in: its `project` argument, else `--project`, POSTHORN_PROJECT or the
 * profile's remembered project, as the CLI chooses (issue 47, item 5).
 */
export async function runMcpServer(opts: { profile: string; apiUrl?: string; project?: string }) {
  const apiUrl = () =>
    (
      opts.apiUrl ||
      process.env.POSTHORN_API_URL ||
      loadProfile(opts.profile)?.api_url ||
      DEFAULT_URL
    ).replace(/\/+$/, '');
  const client = (needKey = true, projectId?: string) => {
    const apiKey = process.env.POSTHORN_API_KEY || loadProfile(opts.profile)?.api_key;
    if (needKey && !apiKey) throw new Error('Not logged in: use the signup or login_start tool first');
    // the profile's remembered project goes with the profile's own key only
    const remembered = process.env.POSTHORN_API_KEY ? undefined : loadProfile(opts.profile)?.project_id;
    return new PosthornClient({
      baseUrl: apiUrl(),
      apiKey,
      projectId: projectId || opts.project || process.env.POSTHORN_PROJECT || remembered,
    });
  };
  const tool = (fn: () => Promise<unknown>) => async (): Promise<ToolResult> => {
    try {
      return { content: [{ type: 'text', text: JSON.stringify(await fn(), null, 2) }] };
    } catch (err) {
      const message =
        err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : (err as Error).message;
      return { content: [{ type: 'text', text: message }], isError: true };
    }
  };

  const server = new McpServer({ name: 'posthorn', version: '0.1.0' });

  server.registerTool(
    'signup',
    {
      description:
        'Create a Posthorn account (no password) and store its key in the local credentials file. Side effects: creates an account, workspace, project and two keys; emails a six-character code. `accept_terms` must be the person\'s own answer to "do you accept the terms of service?" — never set it on their behalf.',
      inputSchema: {
        email: z.string().describe('the person’s email address'),
        name: z.string().describe('the person’s name'),
        accept_terms: z.boolean().describe('the person’s own answer; must be true to sign up'),
      },
    },
    async (args) =>
      tool(async () => {
        const result = await client(false).signup(args);
        saveProfile(opts.profile, {
          api_url: apiUrl(),
          api_key: result.account_key.key,
          key_id: result.account_key.id,
          project_id: result.project.id,
        });
        return {
          account: result.account,
          project: result.project,
          project_key: result.project_key.key,
          next: 'verify_email with the emailed code',
        };
      })(),
  );
  server.registerTool(
    'verify_email',
    {
      description:
        'Confirm the account email with the six-character code from the signup email. Side effect: the account can send.',
      inputSchema: { code: z.string().describe('the six-character code') },
    },
    async ({ code }) => tool(() => client().verifyEmail(code))(),
  );
  server.registerTool(
    'login_start',
    {
      description:
        'Start a browser login: returns a code and a URL for the person to open; then call login_poll. No side effect until they authorise.',
      inputSchema: {},
    },
    async () => tool(() => client(false).startPairing(hostname()))(),
  );
  server.registerTool(
    'login_poll',
    {
      description:
        'Check a browser login started with login_start. When authorised, stores the new key in the credentials file (side effect) and says so.',
      inputSchema: { poll_token: z.string().describe('the poll_token from login_start') },
    },
    async ({ poll_token }) =>
      tool(async () => {
        const state = await client(false).pollPairing(poll_token);
        if (state.status === 'authorized' && state.key) {
          const chosen = await chooseProjectAfterLogin(
            { profile: opts.profile, apiUrl: apiUrl(), project: opts.project },
            state.key,
          );
          saveProfile(opts.profile, {
            api_url: apiUrl(),
            api_key: state.key,
            ...(state.key_id ? { key_id: state.key_id } : {}),
            ...(chosen ? { project_id: chosen } : {}),
          });
          return { status: 'authorized', stored: true, project_id: chosen ?? null };
        }
        return { status: state.status };
      })(),
  );
  server.registerTool(
    'logout',
    {
      description:
        'Remove the stored credential from this machine (side effect). The key itself stays valid.',
      inputSchema: {},
    },
    async () => tool(async () => ({ removed: removeProfile(opts.profile) }))(),
  );
  server.registerTool(
    'whoami',
    {
      description:
        'Read-only: the project, whether it can send and why not, the compliance footer and the inbound address.',
      inputSchema: { project },
    },
    async (args) => tool(() => client(true, args.project).me())(),
  );
  server.registerTool(
    'list_workspaces',
    { description: 'Read-only: the workspaces of the account (needs an all-access key).', inputSchema: {} },
    async () => tool(() => client().workspaces())(),
  );
  server.registerTool(
    'list_projects',
    {
      description:
        'Read-only: the projects of the account with your role (needs an all-access key); the tools’ `project` argument takes their ids.',
      inputSchema: {},
    },
    async () => tool(() => client().projects())(),
  );
  server.registerTool(
    'send_email',
    {
      description:
        'Send an email (side effect: a real message is queued and sent). `from` must be on a verified domain of the project.',
      inputSchema: {
        from: z.string().describe('address or "Name <address>" on a verified domain'),
        to: z.union([z.string(), z.array(z.string()).min(1).max(50)]).describe('recipient address(es)'),
        subject: z.string().min(1),
        html: z.string().optional(),
        text: z.string().optional(),
        project,
      },
    },
    async ({ project: chosen, ...args }) => tool(() => client(true, chosen).sendEmail(args))(),
  );
  server.registerTool(
    'get_email',
    {
      description: 'Read-only: what became of one message, with its event timeline.',
      inputSchema: { id: z.string(), project },
    },
    async ({ id, project: chosen }) => tool(() => client(true, chosen).getEmail(id))(),
  );
  server.registerTool(
    'list_domains',
    {
      description: 'Read-only: the project’s sending domains and their DNS records.',
      inputSchema: { project },
    },
    async (args) => tool(() => client(true, args.project).listDomains())(),
  );
  server.registerTool(
    'add_domain',
    {
      description:
        'Add a sending domain (side effect: creates a DKIM key); returns the DNS records to publish.',
      inputSchema: { domain: z.string().describe('like example.com'), project },
    },
    async ({ domain, project: chosen }) => tool(() => client(true, chosen).addDomain(domain))(),
  );
  server.registerTool(
    'check_domain',
    {
      description:
        'Look the domain’s records up in DNS now and update its status (side effect: status may change).',
      inputSchema: { id: z.string().describe('domain id'), project },
    },
    async ({ id, project: chosen }) => tool(() => client(true, chosen).checkDomain(id))(),
  );
  server.registerTool(
    'create_contact',
    {
      description: 'Create a contact (side effect). A second contact with the same email is an error.',
      inputSchema: {
        email: z.string(),
        first_name: z.string().optional(),
        last_name: z.string().optional(),
        properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
        project,
      },
    },
    async ({ project: chosen, ...args }) => tool(() => client(true, chosen).createContact(args))(),
  );
  server.registerTool(
    'track_event',
    {
      description:
        'Record a customer event for an email address (side effect; creates the contact when unknown).',
      inputSchema: {
        email: z.string(),
        event: z.string().describe('the action, like "purchase"'),
        properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
        value: z.number().optional(),
        currency: z
          .string()
          .optional()
          .describe('ISO 4217; optional: a value without it is revenue without a currency'),
        project,
      },
    },
    async ({ project: chosen, ...args }) => tool(() => client(true, chosen).trackEvent(args))(),
  );

  await server.connect(new StdioServerTransport());
}
