import { Command } from 'commander';
import { registerClientCommands } from './cli/client-commands.ts';
import { registerContactCommands } from './cli/contacts.ts';
import type { OperatorCommand } from './cli/operator.ts';
import { ConfigError } from './config-values.ts';
import type { RoleName } from './runtime.ts';

/**
 * The `posthorn` command's dispatch. The client commands (login, whoami, send, ...) load only the
 * CLI's modules and the API client; the server (serve.ts) and the operator commands load theirs when
 * one of them runs, so a client command answers in a fraction of a second (bench/cli.ts).
 */
async function serve(roles: RoleName[]) {
  await (await import('./cli/serve.ts')).serve(roles);
}

/**
 * Operator commands load their modules only when one runs: a server role does not carry what they
 * use (the mailbox's MIME parser, the reports' formatting).
 */
async function runOperatorCommand(command: OperatorCommand) {
  const operator = await import('./cli/operator.ts');
  await operator.runOperatorCommand(command);
}

const program = new Command('posthorn')
  .description('Posthorn: self-hostable email sending service')
  .showHelpAfterError();

program
  .command('start')
  .description(
    'run every role in one process (API, SMTP submission and inbound MX, worker; embedded PostgreSQL unless DATABASE_URL is set)',
  )
  .action(() => serve(['api', 'smtp', 'worker']));
program
  .command('api')
  .description('run the HTTP API role only')
  .action(() => serve(['api']));
program
  .command('smtp')
  .description(
    'run the SMTP roles only: submission (POSTHORN_SMTP_PORT) and the inbound MX (POSTHORN_MX_PORT)',
  )
  .action(() => serve(['smtp']));
program
  .command('worker')
  .description('run the job worker role only (delivery, retries, schedules)')
  .action(() => serve(['worker']));

program
  .command('mailbox [id]')
  .description(
    'list the dev mailbox (mail captured when no POSTHORN_SMTP_RELAY is set), or print one message decoded',
  )
  .option('-n, --limit <n>', 'how many messages to list', '25')
  .option('--raw', "print the message's raw MIME source instead, byte for byte")
  .action((id: string | undefined, opts: { limit: string; raw?: boolean }) =>
    runOperatorCommand({ kind: 'mailbox', id, limit: Number(opts.limit), raw: opts.raw === true }),
  );

const admin = program.command('admin').description('operator commands');
admin
  .command('plan <workspace> <plan>')
  .description('move a workspace (id or exact name) to a plan: free, starter, pro, unlimited')
  .action((workspace: string, plan: string) => runOperatorCommand({ kind: 'plan', workspace, plan }));

admin
  .command('routes')
  .description(
    "the routes mail leaves by: each route's target, health and traffic per worker process, and the rules",
  )
  .option('--json', 'print the report as JSON (as GET /v1/admin/routes answers)')
  .action((opts: { json?: boolean }) => runOperatorCommand({ kind: 'routes', json: opts.json === true }));

admin
  .command('shared-domain')
  .description(
    'print the DNS records to publish for the shared domain (its DKIM key is created on first use)',
  )
  .action(() => runOperatorCommand({ kind: 'shared-domain' }));

admin
  .command('doctor')
  .description(
    "what stands between this server and real delivery, each with what to do: public URL, TLS, the shared domain's records, reverse DNS, port 25, relays (exit 1 when a check fails)",
  )
  .option('--json', 'print the report as JSON (as GET /v1/admin/readiness answers)')
  .option(
    '--api-url <url>',
    "the server's API base URL including /v1 (or POSTHORN_API_URL; default the server running here, else PORT)",
  )
  .action(async (opts: { json?: boolean; apiUrl?: string }) =>
    (await import('./cli/doctor.ts')).runDoctor(opts),
  );

registerClientCommands(program);
registerContactCommands(program);

program
  .command('migrate')
  .description('apply database migrations and exit')
  .action(() => runOperatorCommand({ kind: 'migrate' }));

program.parseAsync(process.argv).catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`posthorn: configuration error: ${err.message}`);
  } else {
    console.error(`posthorn: ${(err as Error).message}`);
  }
  process.exit(1);
});
