import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { PosthornClient } from '../sdk/client.ts';
import {
  apiUrlOf,
  ask,
  CliError,
  type Common,
  clientOf,
  print,
  projectChoice,
  run,
  sayServer,
  table,
  withCommon,
} from './command-io.ts';
import { credentialsPath, loadProfile, removeProfile, saveProfile } from './credentials.ts';
import { registerLogin } from './login.ts';
import { registerProjectCommands } from './projects.ts';

/** The client commands of `posthorn` (the server commands are in main.ts). */
export function registerClientCommands(program: Command) {
  withCommon(
    program
      .command('signup')
      .description('create an account (no password); stores its key in the credentials file')
      .option('--email <email>', 'your email address')
      .option('--name <name>', 'your name')
      .option('--accept-terms', "accept the service's terms (your own answer; never assumed)"),
  ).action(
    run(async (opts: Common & { email?: string; name?: string; acceptTerms?: boolean }) => {
      const interactive = process.stdin.isTTY === true;
      const email = opts.email ?? (interactive ? await ask('Email: ') : '');
      const name = opts.name ?? (interactive ? await ask('Name: ') : '');
      if (!email || !name) throw new CliError('give --email and --name (or run in a terminal to be asked)');
      sayServer(opts);
      let accepted = opts.acceptTerms === true;
      if (!accepted && interactive) {
        const answer = await ask(
          `Do you accept the terms of service of ${apiUrlOf(opts).replace(/\/v1$/, '')}? [y/N] `,
        );
        accepted = /^y(es)?$/i.test(answer);
      }
      if (!accepted)
        throw new CliError(
          'signing up needs your acceptance of the terms: read them, then pass --accept-terms',
        );
      const client = new PosthornClient({ baseUrl: apiUrlOf(opts) });
      const result = await client.signup({ email, name, accept_terms: true });
      const file = saveProfile(opts.profile, {
        api_url: apiUrlOf(opts),
        api_key: result.account_key.key,
        key_id: result.account_key.id,
        email: result.account.email,
        // the all-access key stays in the sign-up project when the account gets another
        project_id: result.project.id,
      });
      print(opts, { ...result, credentials_file: file }, () =>
        [
          `Account created for ${result.account.email}; project "${result.project.name}" (${result.project.id}).`,
          `Your all-access key is saved in ${file} (profile "${opts.profile}").`,
          `Project key for your application (shown once): ${result.project_key.key}`,
          'A six-character code was emailed to you: confirm it with `posthorn verify-email CODE`.',
        ].join('\n'),
      );
    }),
  );

  registerLogin(program);
  registerProjectCommands(program);

  withCommon(
    program.command('verify-email <code>').description('confirm your account email with the emailed code'),
  ).action(
    run(async (code: string, opts: Common) => {
      const result = await clientOf(opts).verifyEmail(code);
      print(opts, result, () => 'Email confirmed: this account can send.');
    }),
  );

  withCommon(
    program.command('whoami').description('the project, whether it can send (and why not), and the footer'),
  ).action(
    run(async (opts: Common) => {
      const me = await clientOf(opts).me();
      // a project key acts in its own project, whatever was named
      const named = projectChoice(opts);
      const chosen = named?.id === me.project.id ? named : null;
      print(
        opts,
        { ...me, project_chosen_by: chosen?.by ?? 'key' },
        () =>
          `${table([
            ['Project', `${me.project.name} (${me.project.id})`],
            ['Chosen by', chosen?.by ?? 'the key (its only project)'],
            ['Can send', me.sending.ready ? 'yes' : 'no'],
            ['Email confirmed', me.sending.email_confirmed ? 'yes' : 'no'],
            ['Verified domains', me.sending.verified_domains.join(', ') || 'none'],
            ['Default from', me.sending.default_from],
            [
              'Footer address',
              `${me.footer.address}${me.footer.is_your_own_address ? '' : ' (placeholder)'}`,
            ],
            ['Inbound address', me.inbound.address],
          ])}\n\n${me.sending.note}`,
      );
    }),
  );

  const workspaces = program.command('workspaces').description('workspaces of the account');
  withCommon(workspaces.command('list').description('list your workspaces')).action(
    run(async (opts: Common) => {
      const result = await clientOf(opts).workspaces();
      print(opts, result, () =>
        table([
          ['ID', 'NAME', 'PLAN', 'ROLE'],
          ...result.data.map((w) => [w.id, w.name, w.plan, w.role ?? '']),
        ]),
      );
    }),
  );

  withCommon(
    program
      .command('logout')
      .description('remove the stored credential')
      .option('--revoke', 'also revoke the key on the server'),
  ).action(
    run(async (opts: Common & { revoke?: boolean }) => {
      const profile = loadProfile(opts.profile);
      if (!profile)
        throw new CliError(`no stored credential for profile "${opts.profile}" in ${credentialsPath()}`);
      if (opts.revoke && profile.key_id) await clientOf(opts).revokeKey(profile.key_id);
      removeProfile(opts.profile);
      print(
        opts,
        { logged_out: true, revoked: opts.revoke === true },
        () => `Logged out (profile "${opts.profile}")${opts.revoke ? '; the key is revoked' : ''}.`,
      );
    }),
  );

  withCommon(
    program
      .command('send')
      .description('send an email')
      .requiredOption('--from <address>', 'From: an address on a verified domain')
      .requiredOption('--to <address...>', 'recipients')
      .requiredOption('--subject <text>', 'subject')
      .option('--html <html>', 'HTML body')
      .option('--text <text>', 'text body')
      .option('--file <path>', 'read the HTML body from a file')
      .option('--attach <path...>', 'files to attach'),
  ).action(
    run(
      async (
        opts: Common & {
          from: string;
          to: string[];
          subject: string;
          html?: string;
          text?: string;
          file?: string;
          attach?: string[];
        },
      ) => {
        const result = await clientOf(opts).sendEmail({
          from: opts.from,
          to: opts.to,
          subject: opts.subject,
          ...(opts.file ? { html: readFileSync(opts.file, 'utf8') } : opts.html ? { html: opts.html } : {}),
          ...(opts.text ? { text: opts.text } : {}),
          ...(opts.attach
            ? {
                attachments: opts.attach.map((p) => ({
                  filename: basename(p),
                  content: readFileSync(p).toString('base64'),
                })),
              }
            : {}),
        });
        print(opts, result, () => `Accepted: ${result.id} (${result.status})`);
      },
    ),
  );

  const domains = program.command('domains').description("the project's sending domains");
  withCommon(domains.command('list').description('list the domains and their status')).action(
    run(async (opts: Common) => {
      const result = await clientOf(opts).listDomains();
      print(opts, result, () =>
        result.data.length === 0
          ? 'No domains yet: add one with `posthorn domains add example.com`.'
          : table([['ID', 'DOMAIN', 'STATUS'], ...result.data.map((d) => [d.id, d.name, d.status])]),
      );
    }),
  );
  type RecordOut = { type: string; name: string; value: string; priority?: number; status: string };
  // values in zone-file form: a DKIM key is two quoted strings of at most 255 characters (loaded
  // when a command prints records: the other commands never load the domain code)
  const recordsTable = async (d: { records: RecordOut[] }) => {
    const { zoneValue } = await import('../domain/sending-domains/dns-records.ts');
    return table([
      ['TYPE', 'NAME', 'STATUS', 'VALUE'],
      ...d.records.map((r) => [r.type, r.name, r.status, zoneValue(r)]),
    ]);
  };
  type DomainOut = { id: string; name: string; status: string; records: RecordOut[] };
  withCommon(
    domains.command('add <domain>').description('add a sending domain and print the DNS records to publish'),
  ).action(
    run(async (domain: string, opts: Common) => {
      const d = await clientOf(opts).addDomain<DomainOut>(domain);
      const records = await recordsTable(d);
      print(
        opts,
        d,
        () =>
          `Added ${d.name} (${d.id}). Publish these records, then run \`posthorn domains check ${d.id}\`:\n\n${records}`,
      );
    }),
  );
  withCommon(domains.command('check <id>').description('look the records up in DNS now')).action(
    run(async (id: string, opts: Common) => {
      if (!opts.json && process.stderr.isTTY) process.stderr.write('checking DNS...\r');
      const d = await clientOf(opts).checkDomain<DomainOut>(id);
      const records = await recordsTable(d);
      print(opts, d, () => `${d.name}: ${d.status}\n\n${records}`);
    }),
  );

  const keys = program.command('keys').description('API keys of a project (all-access key)');
  type KeyOut = {
    id: string;
    name: string;
    scope: string;
    status: string;
    token_prefix: string;
    key?: string;
  };
  const keyRows = (list: KeyOut[]) =>
    table([
      ['ID', 'NAME', 'SCOPE', 'STATUS', 'PREFIX'],
      ...list.map((k) => [k.id, k.name, k.scope, k.status, k.token_prefix]),
    ]);
  withCommon(keys.command('list <project_id>').description("list a project's keys")).action(
    run(async (projectId: string, opts: Common) => {
      const result = await clientOf(opts).listKeys<{ data: KeyOut[] }>(projectId);
      print(opts, result, () => keyRows(result.data));
    }),
  );
  withCommon(
    keys
      .command('create <project_id> <name>')
      .description('create a project key (the secret is printed once)')
      .option('--expires-in-days <days>', '30, 90 or 365 (default: never)'),
  ).action(
    run(async (projectId: string, name: string, opts: Common & { expiresInDays?: string }) => {
      const key = await clientOf(opts).createKey<KeyOut>(projectId, {
        name,
        ...(opts.expiresInDays ? { expires_in_days: Number(opts.expiresInDays) } : {}),
      });
      print(opts, key, () => `Created ${key.name} (${key.id}). The secret, shown once:\n${key.key}`);
    }),
  );
  withCommon(
    keys.command('rotate <key_id>').description('issue a new secret; the old one stops at once'),
  ).action(
    run(async (keyId: string, opts: Common) => {
      const key = await clientOf(opts).rotateKey<KeyOut>(keyId);
      print(opts, key, () => `Rotated ${key.name}. The new secret, shown once:\n${key.key}`);
    }),
  );
  withCommon(keys.command('revoke <key_id>').description('revoke a key (API and SMTP stop at once)')).action(
    run(async (keyId: string, opts: Common) => {
      await clientOf(opts).revokeKey(keyId);
      print(opts, { revoked: keyId }, () => `Revoked ${keyId}.`);
    }),
  );

  program
    .command('mcp')
    .description('serve the Model Context Protocol over stdio (the same API and credentials as the CLI)')
    .option('--profile <name>', 'credentials profile to use', 'default')
    .option('--api-url <url>', 'API base URL including /v1 (or POSTHORN_API_URL)')
    .option('--project <id>', "the tools' default project (or POSTHORN_PROJECT; else the profile's)")
    .action(async (opts: { profile: string; apiUrl?: string; project?: string }) => {
      const { runMcpServer } = await import('../mcp/server.ts');
      await runMcpServer(opts);
    });

  const emails = program.command('emails').description('sent email');
  withCommon(
    emails
      .command('list')
      .description('the latest messages, newest first')
      .option('-n, --limit <n>', 'how many (1 to 100)', '25')
      .option('--status <status>', 'only this status (queued, sent, delivered, bounced, ...)')
      .option('--to <address>', 'only messages to this recipient'),
  ).action(
    run(async (opts: Common & { limit: string; status?: string; to?: string }) => {
      const page = await clientOf(opts).listEmails({ limit: opts.limit, status: opts.status, to: opts.to });
      print(opts, page, () =>
        page.data.length === 0
          ? 'No email yet: send one with `posthorn send`.'
          : table([
              ['ID', 'STATUS', 'TO', 'SUBJECT', 'CREATED'],
              ...page.data.map((e) => [
                String(e.id),
                String(e.status),
                (e.to as string[]).join(', '),
                String(e.subject ?? ''),
                String(e.created_at ?? ''),
              ]),
            ]),
      );
    }),
  );
  withCommon(emails.command('get <id>').description('what became of one message, and its timeline')).action(
    run(async (id: string, opts: Common) => {
      const email = await clientOf(opts).getEmail(id);
      const events = (email.events ?? []) as {
        type: string;
        recipient: string | null;
        detail: Record<string, unknown>;
        created_at: string;
      }[];
      print(opts, email, () =>
        [
          table([
            ['ID', String(email.id)],
            ['Status', String(email.status)],
            ['From', String(email.from)],
            ['To', (email.to as string[]).join(', ')],
            ['Subject', String(email.subject)],
            ['Last response', String(email.last_response ?? '')],
          ]),
          '',
          'Timeline:',
          table([
            ['TIME', 'EVENT', 'RECIPIENT', 'DETAIL'],
            ...events.map((e) => [e.created_at, e.type, e.recipient ?? '', eventDetail(e.detail)]),
          ]),
        ].join('\n'),
      );
    }),
  );
}

/** An event's detail on one line: the remote server's response when there is one, else its fields. */
function eventDetail(detail: Record<string, unknown>): string {
  if (typeof detail.response === 'string') return detail.response;
  return Object.entries(detail)
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
}
