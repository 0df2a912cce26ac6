import { EventEmitter } from 'node:events';
import { Logger, type Runner, run, type Task, type WorkerEvents } from 'graphile-worker';
import type { Logger as PinoLogger } from 'pino';
import type { Routes } from '../delivery/index.ts';
import { LOGIN_CODE_TASK } from '../domain/accounts/sessions.ts';
import { enqueueDrain } from '../domain/audience/triggers.ts';
import type { DomainContext } from '../domain/core/context.ts';
import { flowAudienceSubscriber } from '../domain/flows/reactions.ts';
import { audienceWebhookSubscriber } from '../domain/webhooks/dispatch.ts';
import { audienceEventTask } from './audience-event.ts';
import { audienceOutboxTask } from './audience-outbox.ts';
import { campaignAbWinnerTask } from './campaign-ab.ts';
import { campaignFinishTask, campaignSendTask } from './campaign-send.ts';
import { campaignStartTask } from './campaign-start.ts';
import { deliverEmailTask } from './deliver-email.ts';
import { flowAdvanceTask } from './flows.ts';
import { importContactsTask } from './import-contacts.ts';
import { watchWorkerLiveness } from './liveness.ts';
import { maintenanceTask } from './maintenance.ts';
import { patientPool } from './patient-pool.ts';
import { recheckDomainsTask } from './recheck-domains.ts';
import { sendLoginCodeTask } from './send-login-code.ts';
import { sendSystemEmailTask } from './send-system-email.ts';
import { webhookDeliverTask } from './webhook-deliver.ts';
import { webhookDispatchTask } from './webhook-dispatch.ts';

export interface WorkerDeps {
  ctx: DomainContext;
  routes: Routes;
  concurrency: number;
  log: PinoLogger;
}

/** One handler for every task of `GraphileWorker.Tasks` (payloads.ts), each typed by its payload. */
export type TaskHandlers = { [Name in keyof GraphileWorker.Tasks]: Task<Name> };

/** The task list: one entry per job name, each in its own file. */
export function taskList(deps: WorkerDeps): TaskHandlers {
  return {
    send_system_email: sendSystemEmailTask(deps),
    [LOGIN_CODE_TASK]: sendLoginCodeTask(deps.ctx),
    deliver_email: deliverEmailTask(deps),
    import_contacts: importContactsTask(deps.ctx),
    campaign_send: campaignSendTask(deps.ctx),
    campaign_finish: campaignFinishTask(deps.ctx),
    campaign_ab_winner: campaignAbWinnerTask(deps.ctx),
    campaign_start: campaignStartTask(deps.ctx),
    audience_event: audienceEventTask(
      [audienceWebhookSubscriber(deps.ctx), flowAudienceSubscriber(deps.ctx)],
      deps.log,
    ),
    flow_advance: flowAdvanceTask(deps.ctx, deps.log),
    audience_outbox: audienceOutboxTask(deps.ctx),
    webhook_dispatch: webhookDispatchTask(deps.ctx),
    webhook_deliver: webhookDeliverTask(deps.ctx),
    maintenance: maintenanceTask({ ctx: deps.ctx, log: deps.log }),
    recheck_domains: recheckDomainsTask(deps.ctx, deps.log),
  };
}

/** Starts graphile-worker on the shared database; signals are handled by the caller. */
export async function startWorker(deps: WorkerDeps): Promise<Runner> {
  const events: WorkerEvents = new EventEmitter();
  const workerIds = new Set<string>();
  // jobs are locked by the worker POOL's id (graphile-worker 0.18), so that is what must heartbeat;
  // the workers' own ids are kept too, for versions that lock by worker
  events.on('pool:create', ({ workerPool }) => workerIds.add(workerPool.id));
  events.on('worker:create', ({ worker }) => workerIds.add(worker.workerId));
  const runner = await run({
    pgPool: patientPool(deps.ctx.pool, deps.log),
    taskList: taskList(deps),
    concurrency: deps.concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    events,
    // the outbox drain also runs every minute, for announcements whose nudge was lost in a crash;
    // so does the flow engine, a safety net under its own scheduling
    crontab:
      '7 * * * * maintenance\n17 * * * * recheck_domains\n* * * * * audience_outbox\n* * * * * flow_advance',
    logger: new Logger((scope) => (level, message, meta) => {
      if (level === 'error' || level === 'warning') deps.log.warn({ scope, meta }, message);
    }),
  });
  await enqueueDrain(deps.ctx.db); // what an earlier process left in the outbox, now
  const stopWatching = watchWorkerLiveness(workerIds, deps.ctx.pool, deps.ctx.config.staleWorkerSeconds);
  runner.promise.finally(stopWatching).catch(() => {});
  return runner;
}
