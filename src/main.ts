import { Command } from 'commander';
import pino from 'pino';
import { registerClientCommands } from './cli/client-commands.ts';
import { runOperatorCommand } from './cli/operator.ts';
import { ConfigError, loadConfig } from './config.ts';
import { ensureWebBuild } from './http/web-app.ts';
import { type RoleName, startRuntime } from './runtime.ts';

/** Starts the given roles and stops them cleanly on SIGTERM/SIGINT. */
async function serve(roles: RoleName[]) {
  const config = loadConfig();
  const log = pino({ level: config.logLevel });
  // a fresh clone or a pull: build the dashboard when its build is missing or older than web/
  if (roles.includes('api')) await ensureWebBuild(log);
  const runtime = await startRuntime(config, roles, log);
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) {
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    log.info(`${signal} received: finishing in-flight work and stopping`);
    runtime.stop().then(
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
    'list the dev mailbox (mail captured when no POSTHORN_SMTP_RELAY is set), or print one message',
  )
  .option('-n, --limit <n>', 'how many messages to list', '25')
  .action((id: string | undefined, opts: { limit: string }) =>
    runOperatorCommand({ kind: 'mailbox', id, limit: Number(opts.limit) }),
  );

const admin = program.command('admin').description('operator commands');
admin
  .command('plan <workspace> <plan>')
  .description('move a workspace (id or exact name) to a plan: free, starter, pro, unlimited')
  .action((workspace: string, plan: string) => runOperatorCommand({ kind: 'plan', workspace, plan }));

admin
  .command('shared-domain')
  .description(
    'print the DNS records to publish for the shared domain (its DKIM key is created on first use)',
  )
  .action(() => runOperatorCommand({ kind: 'shared-domain' }));

registerClientCommands(program);

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
