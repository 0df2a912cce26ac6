import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { ApiError, PosthornClient } from '../sdk/client.ts';
import { loadProfile } from './credentials.ts';
import { findLocalServer } from './local-server.ts';

// What every client command shares: its common options, its API client, its output and its prompts.

export interface Common {
  profile: string;
  json?: boolean;
  apiUrl?: string;
  project?: string;
}

export function withCommon(cmd: Command): Command {
  return cmd
    .option('--profile <name>', 'credentials profile to use', 'default')
    .option('--json', 'print JSON for scripts instead of text')
    .option(
      '--api-url <url>',
      "API base URL including /v1 (or POSTHORN_API_URL; else the profile's, else the server running in this folder, POSTHORN_PUBLIC_URL or PORT, else port 3000)",
    )
    .option(
      '--project <id>',
      "the project to act in, for a key that reaches several (or POSTHORN_PROJECT; else the profile's, from `posthorn projects use`)",
    );
}

/**
 * The server a command talks to and what chose it: `--api-url`, else POSTHORN_API_URL, else the
 * profile's, else the server on this machine (src/cli/local-server.ts).
 */
export function serverOf(opts: Common): { apiUrl: string; source: string } {
  const chosen = opts.apiUrl
    ? { apiUrl: opts.apiUrl, source: '--api-url' }
    : process.env.POSTHORN_API_URL
      ? { apiUrl: process.env.POSTHORN_API_URL, source: 'POSTHORN_API_URL' }
      : (() => {
          const stored = loadProfile(opts.profile)?.api_url;
          return stored ? { apiUrl: stored, source: `profile "${opts.profile}"` } : findLocalServer();
        })();
  return { ...chosen, apiUrl: chosen.apiUrl.replace(/\/+$/, '') };
}

export function apiUrlOf(opts: Common): string {
  return serverOf(opts).apiUrl;
}

/** Says on stderr which server a command that stores its URL (login, signup) is talking to. */
export function sayServer(opts: Common): void {
  const { apiUrl, source } = serverOf(opts);
  process.stderr.write(
    `Server: ${apiUrl} (${source}${source === '--api-url' ? '' : '; --api-url <url> chooses another'})\n`,
  );
}

/**
 * The project a command acts in and what chose it: `--project`, else POSTHORN_PROJECT, else the
 * profile's remembered one (only with the profile's own key: POSTHORN_API_KEY may be another
 * account's), else none (the key's only project, or the server asks).
 */
export function projectChoice(opts: Common): { id: string; by: string } | null {
  if (opts.project) return { id: opts.project, by: '--project' };
  if (process.env.POSTHORN_PROJECT) return { id: process.env.POSTHORN_PROJECT, by: 'POSTHORN_PROJECT' };
  const remembered = process.env.POSTHORN_API_KEY ? undefined : loadProfile(opts.profile)?.project_id;
  return remembered ? { id: remembered, by: `profile "${opts.profile}"` } : null;
}

/** The client for a command: POSTHORN_API_KEY, else the profile's key; refuses when there is none. */
export function clientOf(opts: Common): PosthornClient {
  const apiKey = process.env.POSTHORN_API_KEY || loadProfile(opts.profile)?.api_key;
  if (!apiKey) {
    throw new CliError(
      `not logged in (profile "${opts.profile}"): run \`posthorn signup\` or \`posthorn login\`, or set POSTHORN_API_KEY`,
    );
  }
  return new PosthornClient({ baseUrl: apiUrlOf(opts), apiKey, projectId: projectChoice(opts)?.id });
}

export class CliError extends Error {}

/** Aligned columns for humans. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function print(opts: Common, value: unknown, human: () => string) {
  process.stdout.write(`${opts.json ? JSON.stringify(value, null, 2) : human()}\n`);
}

/** Runs a command body: API errors go to stderr with the server's message, exit code 1. */
export function run<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      const message =
        err instanceof ApiError
          ? `${err.message}${err.status ? ` (HTTP ${err.status})` : ''}${
              /X-Project-Id` is required/.test(err.message)
                ? '\nchoose one with --project <id>, POSTHORN_PROJECT, or `posthorn projects use <id>`'
                : ''
            }`
          : (err as Error).message;
      const hint = /^cannot reach /.test(message)
        ? '\nis the server running? Give its address with --api-url http://host:port/v1'
        : '';
      // exit now with 1: a library's exit hook must not turn a failure into success
      await new Promise<void>((resolve) =>
        process.stderr.write(`posthorn: ${message}${hint}\n`, () => resolve()),
      );
      process.exit(1);
    }
  };
}

/** Opens a URL in the user's browser; says so when it cannot. */
export function openBrowser(url: string) {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'cmd' : 'xdg-open';
  const args = process.platform === 'win32' ? ['/c', 'start', '', url] : [url];
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('error', () => process.stderr.write('(could not open a browser: open the URL above yourself)\n'));
  child.unref();
}

export async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}
