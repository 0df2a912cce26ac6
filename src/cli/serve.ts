import type { Logger } from 'pino';
import { type Config, loadConfig } from '../config.ts';
import { ensureWebBuild } from '../http/web-app.ts';
import { type RoleName, type Runtime, startRuntime } from '../runtime.ts';
import { announceStart, createLogger } from '../startup-log.ts';
import { recordLocalServer } from './local-server.ts';

/**
 * Starts the given roles and stops them cleanly on SIGTERM/SIGINT. The signals are this process's
 * from its first moment: a signal while starting stops the roles once they are up (or gives up a
 * wait for the database), and the embedded PostgreSQL, when there is one, is stopped last. An API
 * records where it listens in the data folder while it runs, for the CLI beside it (local-server.ts).
 */
export async function serve(roles: RoleName[]) {
  const config = loadConfig();
  const log = createLogger(config);
  let stopSignal: string | undefined;
  let started = false;
  let forget = () => {};
  const starting = startRoles(config, roles, log, () => stopSignal !== undefined);
  const shutdown = (signal: string) => {
    if (stopSignal) {
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    stopSignal = signal;
    forget();
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
  if (runtime && !stopSignal) {
    if (runtime.url) forget = recordLocalServer(config.dataDir, runtime.url, config.appUrl);
    announceStart(log, config, runtime);
  }
}

/** The roles' runtime, or nothing when a stop was asked for before it began. */
async function startRoles(
  config: Config,
  roles: RoleName[],
  log: Logger,
  stopRequested: () => boolean,
): Promise<Runtime | undefined> {
  // the embedded database must not stop itself on the signals that serve() answers
  if (!config.databaseUrl) (await import('../db/embedded.ts')).leaveStopSignalsToCaller();
  // a fresh clone or a pull: build the dashboard when its build is missing or older than web/
  if (roles.includes('api')) await ensureWebBuild(log);
  if (stopRequested()) return undefined;
  return startRuntime(config, roles, log, { stopRequested });
}
