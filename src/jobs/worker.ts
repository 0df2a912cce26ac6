import { Logger, type Runner, run } from 'graphile-worker';
import type pg from 'pg';
import type { Logger as PinoLogger } from 'pino';
import type { Db } from '../db/database.ts';
import type { Transport } from '../delivery/transport.ts';
import { sendSystemEmailTask } from './send-system-email.ts';

export interface WorkerDeps {
  pool: pg.Pool;
  db: Db;
  transport: Transport;
  systemFrom: string;
  concurrency: number;
  log: PinoLogger;
}

/** The task list: one entry per job name, each in its own file. */
export function taskList(deps: WorkerDeps) {
  return {
    send_system_email: sendSystemEmailTask(deps),
  };
}

/** Starts graphile-worker on the shared database; signals are handled by the caller. */
export function startWorker(deps: WorkerDeps): Promise<Runner> {
  return run({
    pgPool: deps.pool,
    taskList: taskList(deps),
    concurrency: deps.concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new Logger((scope) => (level, message, meta) => {
      if (level === 'error' || level === 'warning') deps.log.warn({ scope, meta }, message);
    }),
  });
}
