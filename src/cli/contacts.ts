import { readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import type { Command } from 'commander';
import { ApiError, type PosthornClient } from '../sdk/client.ts';
import { CliError, type Common, clientOf, print, run, withCommon } from './command-io.ts';

/**
 * `posthorn contacts import file.csv --list <id or name> --map "Column=target"`: uploads the file
 * as it is (CSV or JSON), then follows the import, showing its progress, until it ends.
 */

interface ContactImport {
  id: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  processed: number;
  total: number | null;
  created: number;
  updated: number;
  skipped: number;
  error_count: number;
  errors: { row: number; error: string }[];
  failure: string | null;
  list_ids: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const collect = (value: string, previous: string[]) => [...previous, value];
const n = (v: number) => v.toLocaleString('en');

/** `Column=target` pairs as the API's mapping (a target: a field, skip, or a property name). */
export function mappingOfPairs(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const mapping: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.lastIndexOf('=');
    if (at <= 0 || at === pair.length - 1)
      throw new CliError(
        `--map takes "Column=target" (e.g. "Email Address=email" or "Zip=skip"), got "${pair}"`,
      );
    mapping[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return mapping;
}

/** Each --list as a list id: an id is kept, a name is the project's list of that name, created if missing. */
async function listIdsOf(
  client: PosthornClient,
  values: string[],
): Promise<{ ids: string[]; created: string[] }> {
  const ids: string[] = [];
  const created: string[] = [];
  let lists: { id: string; name: string }[] | null = null;
  for (const value of values) {
    if (UUID.test(value)) {
      ids.push(value);
      continue;
    }
    lists ??= (await client.request<{ data: { id: string; name: string }[] }>('GET', '/lists')).data;
    const found = lists.find((l) => l.name === value);
    if (found) ids.push(found.id);
    else {
      const list = await client.request<{ id: string; name: string }>('POST', '/lists', { name: value });
      lists.push(list);
      ids.push(list.id);
      created.push(value);
    }
  }
  return { ids, created };
}

async function upload(client: PosthornClient, file: string, query: URLSearchParams): Promise<ContactImport> {
  const json = extname(file).toLowerCase() === '.json';
  const res = await fetch(`${client.baseUrl}/contacts/import?${query}`, {
    method: 'POST',
    headers: {
      ...(client.apiKey ? { authorization: `Bearer ${client.apiKey}` } : {}),
      ...(client.projectId ? { 'x-project-id': client.projectId } : {}),
      'content-type': json ? 'application/json' : 'text/csv',
    },
    body: readFileSync(file),
  }).catch((err: Error) => {
    throw new ApiError(0, `cannot reach ${client.baseUrl}: ${err.message}`, null);
  });
  const body = (await res.json().catch(() => null)) as (ContactImport & { error?: string }) | null;
  if (!res.ok) throw new ApiError(res.status, body?.error ?? `HTTP ${res.status}`, body);
  return body as ContactImport;
}

function progressLine(i: ContactImport): string {
  return `${n(i.processed)}${i.total ? ` of ${n(i.total)}` : ''} rows read: ${n(i.created)} created, ${n(i.updated)} updated, ${n(i.skipped)} skipped`;
}

/** Follows an import until it ends, writing its progress to stderr when it changes. */
async function follow(
  client: PosthornClient,
  started: ContactImport,
  quiet: boolean,
): Promise<ContactImport> {
  let current = started;
  let shown = '';
  const tty = process.stderr.isTTY === true;
  while (current.status === 'queued' || current.status === 'running') {
    await new Promise((r) => setTimeout(r, 500));
    current = await client.request<ContactImport>('GET', `/imports/${encodeURIComponent(started.id)}`);
    const line = progressLine(current);
    if (!quiet && line !== shown && current.processed > 0) {
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
      shown = line;
    }
  }
  if (tty && shown && !quiet) process.stderr.write('\n');
  return current;
}

function summary(i: ContactImport, file: string, listsCreated: string[]): string {
  const lines = [
    `Imported ${basename(file)}: ${n(i.processed)} rows, ${n(i.created)} created, ${n(i.updated)} updated, ${n(i.skipped)} skipped.`,
  ];
  if (listsCreated.length) lines.push(`Created the lists ${listsCreated.map((l) => `"${l}"`).join(', ')}.`);
  if (i.list_ids.length) lines.push(`Contacts added to ${i.list_ids.length} list(s).`);
  for (const e of i.errors.slice(0, 20)) lines.push(`  line ${e.row}: ${e.error}`);
  if (i.error_count > 20) lines.push(`  … and ${n(i.error_count - 20)} more (--json lists up to 1,000)`);
  return lines.join('\n');
}

export function registerContactCommands(program: Command) {
  const contacts = program.command('contacts').description("the project's contacts");
  withCommon(
    contacts
      .command('import <file>')
      .description(
        'import a CSV file (comma, semicolon or tab; Mailchimp, Brevo, listmonk, Resend and Substack exports as they are) or a JSON array of contacts, showing progress',
      )
      .option(
        '--list <id or name>',
        'add every contact to this list (a name not found is created); repeatable',
        collect,
        [],
      )
      .option(
        '--map <column=target>',
        'map a column: "Zip=skip", "Courriel=email", "Ville=city" (a property); repeatable',
        collect,
        [],
      )
      .option('--no-wait', 'answer with the import at once instead of following it'),
  ).action(
    run(async (file: string, opts: Common & { list: string[]; map: string[]; wait: boolean }) => {
      try {
        if (!statSync(file).isFile()) throw new Error('not a file');
      } catch {
        throw new CliError(`cannot read ${file}: give the path of a CSV or JSON file`);
      }
      const mapping = mappingOfPairs(opts.map);
      const client = clientOf(opts);
      const lists = await listIdsOf(client, opts.list);
      const query = new URLSearchParams({ filename: basename(file) });
      if (lists.ids.length) query.set('list_ids', lists.ids.join(','));
      if (mapping) query.set('mapping', JSON.stringify(mapping));
      const started = await upload(client, file, query);
      if (!opts.wait) {
        print(
          opts,
          started,
          () => `Import ${started.id} started: follow it with GET /v1/imports/${started.id}`,
        );
        return;
      }
      const done = await follow(client, started, opts.json === true);
      if (done.status === 'failed') throw new CliError(`the import failed: ${done.failure}`);
      print(opts, done, () => summary(done, file, lists.created));
    }),
  );
}
