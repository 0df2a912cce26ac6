import { loadConfig } from '../config.ts';
import { setWorkspacePlan } from '../domain/accounts/workspaces.ts';
import { DomainError } from '../domain/core/errors.ts';
import { isUuid } from '../domain/core/ids.ts';
import { listMailboxMessages, mailboxMessageRaw, readMailboxMessage } from '../domain/mailbox/messages.ts';
import { routesReport } from '../domain/operator/routes-report.ts';
import { sharedDomainKey } from '../domain/sending-domains/dkim-keys.ts';
import { formatRecordsToPublish, sharedDomainRecords } from '../domain/sending-domains/dns-records.ts';
import { startRuntime } from '../runtime.ts';
import { formatMailboxMessage } from './mailbox.ts';
import { formatRoutesReport } from './routes.ts';

export type OperatorCommand =
  | { kind: 'mailbox'; id?: string; limit: number; raw?: boolean }
  | { kind: 'plan'; workspace: string; plan: string }
  | { kind: 'migrate' }
  | { kind: 'routes'; json: boolean }
  | { kind: 'shared-domain' };

/**
 * Operator commands run against the database directly (the embedded one too, when Posthorn is not
 * running on it), so they work before any key exists.
 */
export async function runOperatorCommand(command: OperatorCommand) {
  const config = loadConfig();
  const runtime = await startRuntime(config, [], silent);
  try {
    switch (command.kind) {
      case 'routes': {
        const report = await routesReport(runtime.ctx.db, runtime.ctx.config);
        console.log(command.json ? JSON.stringify(report, null, 2) : formatRoutesReport(report));
        break;
      }
      case 'migrate':
        console.log('migrations applied');
        break;
      case 'plan': {
        const workspace = await setWorkspacePlan(runtime.ctx, command.workspace, command.plan);
        console.log(`workspace ${workspace.name} (${workspace.id}) is now on the ${workspace.plan} plan`);
        break;
      }
      case 'shared-domain': {
        const key = await sharedDomainKey(runtime.ctx);
        const domain = runtime.ctx.config.sharedDomain;
        console.log(
          `Publish these records for the shared domain ${domain} (a TXT value over 255 characters is several quoted strings in one record; DNS joins them):\n`,
        );
        console.log(formatRecordsToPublish(sharedDomainRecords(runtime.ctx.config, key)));
        console.log(
          '\nReplace each <...> with your own value. The sending IPs also need reverse DNS (PTR) naming a host that resolves back to them.',
        );
        break;
      }
      case 'mailbox':
        if (command.id) {
          if (!isUuid(command.id)) throw new Error(`"${command.id}" is not a mailbox message id`);
          const db = runtime.ctx.db;
          if (command.raw) process.stdout.write((await mailboxMessageRaw(db, command.id)).toString('utf8'));
          else {
            const message = await readMailboxMessage(db, command.id);
            process.stdout.write(formatMailboxMessage(message, `${runtime.ctx.config.appUrl}/mailbox`));
          }
        } else {
          const page = await listMailboxMessages(runtime.ctx.db, { limit: command.limit, offset: 0 });
          const rows = page.data;
          if (rows.length === 0) {
            console.log(
              'The dev mailbox is empty. Mail is captured here when POSTHORN_SMTP_RELAY is not set.',
            );
          }
          for (const r of rows) {
            console.log(
              `${r.id}  ${r.created_at}  ${r.envelope.to.join(',').padEnd(30)}  ${r.subject ?? ''}`,
            );
          }
          if (rows.length)
            console.log('\nprint one with: posthorn mailbox <id> (decoded; --raw for its MIME source)');
        }
        break;
    }
  } catch (err) {
    process.exitCode = 1;
    console.error(`posthorn: ${err instanceof DomainError ? err.message : (err as Error).message}`);
  } finally {
    await runtime.stop();
  }
  // exit with the command's outcome (the embedded database's exit hooks must not decide it)
  process.exit(process.exitCode ?? 0);
}

const silent = {
  info() {},
  warn() {},
  error() {},
  child() {
    return silent;
  },
} as never;
