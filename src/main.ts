import { Command } from 'commander';
import type { Logger } from 'pino';
import { registerClientCommands } from './cli/client-commands.ts';
import { registerContactCommands } from './cli/contacts.ts';
import type { OperatorCommand } from './cli/operator.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { ensureWebBuild } from './http/web-app.ts';
import { type RoleName, type Runtime, startRuntime } from './runtime.ts';
import { announceStart, createLogger } from './startup-log.ts';

/**
 * Starts the given roles and stops them cleanly on SIGTERM/SIGINT. The signals are this process's
 * from its first moment: a signal while starting stops the roles once they are up (or gives up a
 * wait for the database), and the embedded PostgreSQL, when there is one, is stopped last.
 */
async function serve(roles: RoleName[]) {
  const config = loadConfig();
  const log = createLogger(config);
  let stopSignal: string | undefined;
  let started = false;
  const starting = startRoles(config, roles, log, () => stopSignal !== undefined);
  const shutdown = (signal: string) => {
    if (stopSignal) {
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    stopSignal = signal;
    log.info(
      started
        ? `${signal} received: finishing in-flight work and stopping`
        : `${signal} received while starting: stopping once started`,
    );
    starting
      .then((runtime) => runtime?.stop())
      .then(
        () => {
          log.info('stopped');
          process.exit(0);
        },
        (err) => {
          log.error({ err }, 'error while stopping');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const runtime = await starting;
  started = true;
  if (runtime && !stopSignal) announceStart(log, config, runtime);
}

/** The roles' runtime, or nothing when a stop was asked for before it began. */
async function startRoles(
  config: Config,
  roles: RoleName[],
  log: Logger,
  stopRequested: () => boolean,
): Promise<Runtime | undefined> {
  // the embedded database must not stop itself on the signals that serve() answers
  if (!config.databaseUrl) (await import('./db/embedded.ts')).leaveStopSignalsToCaller();
  // a fresh clone or a pull: build the dashboard when its build is missing or older than web/
  if (roles.includes('api')) await ensureWebBuild(log);
  if (stopRequested()) return undefined;
  return startRuntime(config, roles, log, { stopRequested });
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
