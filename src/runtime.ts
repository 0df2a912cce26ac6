import { flushCompileCache } from 'node:module';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { connectDatabase, type DatabaseHandle } from './db/database.ts';
import type { EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { whileDatabaseUnavailable } from './db/patience.ts';
import { createRoutes, type Routes } from './delivery/index.ts';
import { EventTracker } from './domain/audience/events.ts';
import type { DomainContext } from './domain/core/context.ts';
import { createSecrets } from './domain/core/secrets.ts';
import { EmailWriter } from './domain/emails/email-writer.ts';
import { RateLimiter } from './domain/keys/rate-limit.ts';
import { RequestLogWriter } from './domain/keys/request-log.ts';
import { connectionLeases } from './domain/shaping/leases.ts';
import { sitePacer } from './domain/shaping/pace.ts';
import { sourceWarmup } from './domain/shaping/warmup-count.ts';
import type { AppDeps } from './http/app.ts';
import type { WorkerRole } from './jobs/worker.ts';
import type { SmtpDoors } from './smtp/listen.ts';

export type RoleName = 'api' | 'worker' | 'smtp';

/** A running Posthorn: the roles asked for, on one database, and how to stop them cleanly. */
export interface Runtime {
  ctx: DomainContext;
  database: DatabaseHandle;
  app?: FastifyInstance;
  worker?: WorkerRole;
  /** The ways out, one transport each. */
  routes: Routes;
  url?: string;
  /** The SMTP doors' ports, when the smtp role runs. */
  smtp?: SmtpDoors;
  /** The embedded PostgreSQL's data directory, when this process started one. */
  embeddedPgDir?: string;
  stop(): Promise<void>;
}

/** How long a starting process waits for its database before giving up. */
const STARTUP_PATIENCE_MS = 120_000;

export interface StartOptions {
  /** Whether a stop was asked for meanwhile: the wait for an unreachable database then gives up. */
  stopRequested?: () => boolean;
}

/** The composition root: wires the database, secrets, routes, HTTP and worker roles. */
export async function startRuntime(
  config: Config,
  roles: RoleName[],
  log = pino({ level: config.logLevel }),
  { stopRequested }: StartOptions = {},
): Promise<Runtime> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    log.info({ dataDir: config.dataDir }, 'starting the embedded PostgreSQL');
    const { databaseUrlFor, openEmbeddedPostgres } = await import('./db/embedded.ts');
    embedded = await openEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPgPort || undefined,
      notice: (line) => log.warn(line),
    });
    databaseUrl = embedded.url;
    await ensureDatabase(databaseUrl, 'posthorn');
    databaseUrl = databaseUrlFor(databaseUrl, 'posthorn');
  }
  const database = connectDatabase(databaseUrl, config.poolSize);
  // a database still starting (or restarting) is waited for, not a reason to exit
  await whileDatabaseUnavailable(() => migrate(database.pool), {
    patienceMs: STARTUP_PATIENCE_MS,
    onWait: (err) =>
      log.warn(
        { err: (err as Error).message },
        `the database is not reachable yet: waiting up to ${STARTUP_PATIENCE_MS / 1000} s for it (is DATABASE_URL right?)`,
      ),
    onBack: () => log.info('the database is reachable'),
    stopped: stopRequested,
  });
  const ctx: DomainContext = {
    db: database.db,
    pool: database.pool,
    secrets: createSecrets(config.secret),
    config,
    emailWriter: new EmailWriter(database.db),
    eventTracker: new EventTracker(database.db),
  };
  const { routes, leases } = routesOf(config, database.db, log, roles.includes('worker'));
  const requestLog = new RequestLogWriter(database.pool);
  const rateLimiter = new RateLimiter(database.pool, config.rateLimitPerSecond);

  // the SMTP doors first: the API shows the ports they listen on
  let smtp: SmtpDoors | undefined;
  if (roles.includes('smtp')) {
    const { listenSmtp } = await import('./smtp/listen.ts');
    smtp = await listenSmtp({ ctx, log: log.child({ role: 'smtp' }), requestLog });
  }
  // each role's modules load only when it runs: a worker does not carry the HTTP stack, and so on
  const { app, url } = roles.includes('api')
    ? await startApi({
        ctx,
        requestLog,
        rateLimiter,
        logger: log.child({ role: 'api' }),
        smtpPorts: smtp ? { port: smtp.submissionPort, tls_port: smtp.tlsPort } : undefined,
        devMailbox: routes.hasMailbox,
      })
    : { app: undefined, url: undefined };
  const worker = roles.includes('worker') ? await startWorkerRole(config, ctx, routes, log) : undefined;
  // the roles' modules are loaded: write them to Node's compile cache now (bin/posthorn.js enables
  // it), so a process that is killed rather than stopped still leaves the next start its cache
  flushCompileCache();

  let stopping: Promise<void> | undefined;
  return {
    ctx,
    database,
    app,
    worker,
    routes,
    url,
    smtp,
    embeddedPgDir: embedded?.pgDir,
    stop() {
      stopping ??= (async () => {
        await Promise.all([app?.close(), smtp?.close()]); // finish in-flight requests and messages
        await ctx.eventTracker?.close();
        await worker?.stop();
        await requestLog.close();
        await routes.close();
        await leases?.close();
        await database.close();
        await embedded?.stop();
      })();
      return stopping;
    },
  };
}

/**
 * The routes, lent what a direct route keeps in PostgreSQL so every worker process keeps the same
 * numbers: its sites' paces, its source addresses' warm-up, and (in a worker) its sites' connections.
 */
function routesOf(config: Config, db: DomainContext['db'], log: Logger, worker: boolean) {
  const leases = worker ? connectionLeases(db) : undefined;
  const routes = createRoutes(
    config,
    db,
    { info: (line) => log.info(line), warn: (line) => log.warn(line) },
    {
      sitePace: sitePacer(db),
      sourceWarmup: sourceWarmup(db),
      ...(leases ? { connectionLeases: leases } : {}),
    },
  );
  return { routes, leases };
}

/** The worker role: its jobs' workers, and those kept for transactional mail. */
async function startWorkerRole(
  config: Config,
  ctx: DomainContext,
  routes: Routes,
  log: Logger,
): Promise<WorkerRole> {
  const { startWorker } = await import('./jobs/worker.ts');
  const worker = await startWorker({
    ctx,
    routes,
    concurrency: config.workerConcurrency,
    transactionalWorkers: config.transactionalWorkers,
    log: log.child({ role: 'worker' }),
  });
  const { shares } = worker;
  if (shares.warning) log.warn(shares.warning);
  log.info(
    `worker running (${config.workerConcurrency} concurrent jobs, ${shares.transactional} of them kept for transactional mail and ${shares.eventPath} for the event path; routes: ${routes.describe()})`,
  );
  // said, never fatal: the DNS may be fixed while the worker runs
  routes
    .check()
    .then((problems) => {
      for (const line of problems) log.warn(line);
    })
    .catch((err) => log.warn(`the routes could not be checked: ${(err as Error).message}`));
  return worker;
}

async function ensureDatabase(adminUrl: string, name: string) {
  const admin = connectDatabase(adminUrl, 1);
  try {
    const { rowCount } = await admin.pool.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await admin.pool.query(`create database ${name}`);
  } finally {
    await admin.close();
  }
}

/** The API role: the app built and listening on the configured port. */
async function startApi(deps: AppDeps): Promise<{ app: FastifyInstance; url: string }> {
  const { buildApp } = await import('./http/app.ts');
  const app = await buildApp(deps);
  const url = await app.listen({ port: deps.ctx.config.port, host: deps.ctx.config.host });
  deps.logger?.info(`API listening on ${url}/v1 (docs at ${url}/v1/docs)`);
  return { app, url };
}
