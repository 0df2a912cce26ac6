import { EventEmitter } from 'node:events';
import { Logger, run, type Task, type WorkerEvents } from 'graphile-worker';
import type { Logger as PinoLogger } from 'pino';
import type { TaskName } from '../db/enqueue.ts';
import { whileDatabaseUnavailable } from '../db/patience.ts';
import type { Routes } from '../delivery/index.ts';
import { SIGNUP_CODE_TASK } from '../domain/accounts/code-signup.ts';
import { LOGIN_CODE_TASK } from '../domain/accounts/sessions.ts';
import { enqueueDrain } from '../domain/audience/triggers.ts';
import type { DomainContext } from '../domain/core/context.ts';
import { flowAudienceSubscriber } from '../domain/flows/reactions.ts';
import { reclaimAbandoned } from '../domain/sending/claim.ts';
import { deliverClaimed } from '../domain/sending/deliver.ts';
import { DeliveryScheduler } from '../domain/sending/scheduler.ts';
import { adoptWaitingSystemMail } from '../domain/sending/system-mail.ts';
import { audienceWebhookSubscriber } from '../domain/webhooks/dispatch.ts';
import { audienceEventTask } from './audience-event.ts';
import { audienceOutboxTask } from './audience-outbox.ts';
import { campaignAbWinnerTask } from './campaign-ab.ts';
import { campaignFinishTask, campaignSendTask } from './campaign-send.ts';
import { campaignStartTask } from './campaign-start.ts';
import { campaignStatsRefreshTask } from './campaign-stats.ts';
import { deliverEmailTask } from './deliver-email.ts';
import { dmarcAlertsTask } from './dmarc-alerts.ts';
import { flowAdvanceTask } from './flows.ts';
import { importContactsTask } from './import-contacts.ts';
import { watchWorkerLiveness } from './liveness.ts';
import { maintenanceTask } from './maintenance.ts';
import { patientPool } from './patient-pool.ts';
import { recheckDomainsTask } from './recheck-domains.ts';
import { sendLoginCodeTask, sendPasswordResetTask, sendSignupCodeTask } from './send-login-code.ts';
import { supervised } from './supervised.ts';
import { webhookDeliverTask } from './webhook-deliver.ts';
import { webhookDispatchTask } from './webhook-dispatch.ts';

export interface WorkerDeps {
  ctx: DomainContext;
  routes: Routes;
  /** The process's delivery scheduler, which delivery jobs hand their claimed messages to. */
  scheduler: DeliveryScheduler;
  /** Jobs the process runs at once, in all. */
  concurrency: number;
  /** Of those, workers that run transactional mail's deliveries only (0: none; see workerShares). */
  transactionalWorkers: number;
  log: PinoLogger;
}

/** One handler for every task of `GraphileWorker.Tasks` (payloads.ts), each typed by its payload. */
export type TaskHandlers = { [Name in keyof GraphileWorker.Tasks]: Task<Name> };

/** The task list: one entry per job name, each in its own file. */
export function taskList(deps: WorkerDeps): TaskHandlers {
  return {
    [LOGIN_CODE_TASK]: sendLoginCodeTask(deps.ctx),
    [SIGNUP_CODE_TASK]: sendSignupCodeTask(deps.ctx),
    send_password_reset: sendPasswordResetTask(deps.ctx),
    deliver_email: deliverEmailTask(deps.scheduler, true),
    deliver_transactional: deliverEmailTask(deps.scheduler, false),
    import_contacts: importContactsTask(deps.ctx),
    campaign_send: campaignSendTask(deps.ctx),
    campaign_finish: campaignFinishTask(deps.ctx),
    campaign_ab_winner: campaignAbWinnerTask(deps.ctx),
    campaign_start: campaignStartTask(deps.ctx),
    campaign_stats_refresh: campaignStatsRefreshTask(deps.ctx),
    audience_event: audienceEventTask(
      [audienceWebhookSubscriber(deps.ctx), flowAudienceSubscriber(deps.ctx)],
      deps.log,
    ),
    flow_advance: flowAdvanceTask(deps.ctx, deps.log),
    audience_outbox: audienceOutboxTask(deps.ctx),
    webhook_dispatch: webhookDispatchTask(deps.ctx),
    dmarc_alerts: dmarcAlertsTask(deps.ctx),
    webhook_deliver: webhookDeliverTask(deps.ctx),
    maintenance: maintenanceTask({ ctx: deps.ctx, log: deps.log }),
    recheck_domains: recheckDomainsTask(deps.ctx, deps.log),
  };
}

/** The tasks of an audience's event path: the outbox drain, its announcements, the flow engine's rounds. */
export const EVENT_PATH_TASKS = ['audience_outbox', 'audience_event', 'flow_advance'] as const;

/**
 * The workers kept for some tasks only, beside the pool that runs every task (these first):
 * transactional deliveries, which no campaign's or flow's jobs, however many and however slow
 * their route, may hold; and the event path, which no delivery, however long, may hold.
 */
const KEPT_POOLS: { name: string; share: 'transactional' | 'eventPath'; tasks: readonly TaskName[] }[] = [
  { name: 'the transactional worker pool', share: 'transactional', tasks: ['deliver_transactional'] },
  { name: 'the event path worker pool', share: 'eventPath', tasks: EVENT_PATH_TASKS },
];

/**
 * How a worker process's jobs at once are shared: the transactional workers, then one worker for
 * the event path, are taken out of the total, never added to it, so `POSTHORN_WORKER_CONCURRENCY`
 * bounds what the process runs (and the database connections it holds); at least one worker is
 * left for every other job. The event path's worker is there because deliveries of flows and
 * campaigns run for a second or more each: when they hold every other worker, an event that should
 * start a flow would wait for one of them to finish (a burst of them took up to 1.6 s at once).
 */
export function workerShares(concurrency: number, transactional: number): WorkerShares {
  const kept = Math.max(0, Math.min(transactional, concurrency - 1));
  // a share asked for that the total cannot hold is said, not silently made smaller
  const warning =
    kept < transactional
      ? `POSTHORN_TRANSACTIONAL_WORKERS=${transactional} is more than POSTHORN_WORKER_CONCURRENCY=${concurrency} leaves (one worker always runs every other job): ${kept} kept for transactional mail`
      : null;
  const eventPath = concurrency - kept >= 2 ? 1 : 0;
  return { every: concurrency - kept - eventPath, transactional: kept, eventPath, warning };
}

export interface WorkerShares {
  every: number;
  transactional: number;
  /** Workers that run the event path's tasks only (EVENT_PATH_TASKS): 1, or 0 when the total leaves no room. */
  eventPath: number;
  /** Why the transactional share is smaller than asked, or null. */
  warning: string | null;
}

/**
 * graphile-worker's warnings and errors, in the worker's log. Ctrl-C in a terminal signals the
 * whole process group, the embedded PostgreSQL too, which stops at once: the pools' UNLISTEN on the
 * way out then meets a closed connection ("write EPIPE", once per pool). Nothing is lost (what was
 * claimed goes back with its claim), so once stopping that is said at debug level, not as a warning.
 */
function poolLogger(log: WorkerDeps['log'], stopping: { now: boolean }) {
  return new Logger((scope) => (level, message, meta) => {
    if (level !== 'error' && level !== 'warning') return;
    if (stopping.now && /UNLISTEN/.test(message)) log.debug({ scope, meta }, message);
    else log.warn({ scope, meta }, message);
  });
}

/** How long a stopping worker waits for the deliveries in flight before it leaves them to their claims. */
const STOP_GRACE_MS = 10_000;

/** The worker role as the runtime holds it: its events, and a stop that finishes in-flight jobs. */
export interface WorkerRole {
  events: WorkerEvents;
  /** The delivery scheduler holding the process's claimed messages. */
  scheduler: DeliveryScheduler;
  /** How its jobs at once are shared (workerShares). */
  shares: WorkerShares;
  stop(): Promise<void>;
}

/**
 * Starts graphile-worker on the shared database (signals are handled by the caller): one runner for
 * every task, and one kept for transactional mail. A runner whose pool stops on an error of its own
 * (graphile-worker gives up on a job it could not release, its queue in doubt) is logged and started
 * again, so the process never ends on it nor lives on without workers; the failed pool's ids stop
 * heartbeating, and another pool unlocks its jobs once they are stale.
 */
export async function startWorker(options: Omit<WorkerDeps, 'scheduler'>): Promise<WorkerRole> {
  const events: WorkerEvents = new EventEmitter();
  const workerIds = new Set<string>();
  // the delivery jobs' claims heartbeat beside the workers: a batch in flight is never taken again
  const scheduler = new DeliveryScheduler(options, deliverClaimed, {
    maxWaiting: options.ctx.config.deliveryQueue,
    maxInFlight: options.ctx.config.deliveryInFlight,
    heartbeats: workerIds,
    log: options.log,
  });
  const deps: WorkerDeps = { ...options, scheduler };
  // jobs are locked by the worker POOL's id (graphile-worker 0.18), so that is what must heartbeat;
  // the workers' own ids are kept too, for versions that lock by worker
  events.on('pool:create', ({ workerPool }) => workerIds.add(workerPool.id));
  events.on('worker:create', ({ worker }) => workerIds.add(worker.workerId));
  events.on('pool:release', ({ workerPool }) => workerIds.delete(workerPool.id));
  events.on('worker:release', ({ worker }) => workerIds.delete(worker.workerId));
  const stopping = { now: false };
  const logger = poolLogger(deps.log, stopping);
  const common = {
    pgPool: patientPool(deps.ctx.pool, deps.log),
    noHandleSignals: true,
    pollInterval: 1000,
    events,
    logger,
  };
  const shares = workerShares(deps.concurrency, deps.transactionalWorkers);
  const tasks = taskList(deps);
  const runners = [
    await supervised('the worker pool', deps.log, () =>
      run({
        ...common,
        taskList: tasks,
        concurrency: shares.every,
        // the outbox drain also runs every minute, for announcements whose nudge was lost in a
        // crash; so does the flow engine, a safety net under its own scheduling
        crontab:
          '7 * * * * maintenance\n17 * * * * recheck_domains\n* * * * * audience_outbox\n* * * * * flow_advance',
      }),
    ),
  ];
  // the kept shares, each a pool of its own running only its tasks (the same handlers as above)
  for (const kept of KEPT_POOLS) {
    const concurrency = shares[kept.share];
    if (concurrency === 0) continue;
    const keptTasks = Object.fromEntries(kept.tasks.map((name) => [name, tasks[name]]));
    runners.push(
      await supervised(kept.name, deps.log, () => run({ ...common, taskList: keptTasks, concurrency })),
    );
  }
  // what an earlier process left in the outbox, now; a database gone meanwhile is waited for (and
  // the crontab drains every minute besides), never a reason for a started worker to end
  await whileDatabaseUnavailable(() => enqueueDrain(deps.ctx.db), {
    patienceMs: 60_000,
    stopped: () => deps.ctx.pool.ended,
  }).catch((err) =>
    deps.log.warn({ err }, 'the outbox drain at start failed: the crontab runs it within a minute'),
  );
  // what an earlier version's outbox still held leaves by the one path (waited for like the drain)
  await whileDatabaseUnavailable(() => adoptWaitingSystemMail(deps.ctx), {
    patienceMs: 60_000,
    stopped: () => deps.ctx.pool.ended,
  }).then(
    (adopted) =>
      adopted > 0 && deps.log.info(`${adopted} system email(s) waiting from before the upgrade queued again`),
    (err) =>
      deps.log.warn(
        { err },
        'the system mail of an earlier version could not be queued: tried at the next start',
      ),
  );
  const stopWatching = watchWorkerLiveness(workerIds, deps.ctx.pool, deps.ctx.config.staleWorkerSeconds, {
    // what a dead process (or a batch that could not record) left in `sending`, queued again
    reclaim: () => reclaimAbandoned(deps.ctx.db, deps.ctx.config.staleWorkerSeconds),
  });
  let stopped: Promise<void> | undefined;
  return {
    events,
    shares,
    scheduler,
    // once: a second stop (the runtime's, after a test or a supervisor stopped the role) waits for the first
    stop() {
      stopped ??= (async () => {
        stopping.now = true;
        await Promise.all(runners.map((r) => r.stop()));
        // the sessions in flight get a moment to finish; what is left goes back with its claim
        await scheduler.stop(STOP_GRACE_MS);
        stopWatching();
      })();
      return stopped;
    },
  };
}
