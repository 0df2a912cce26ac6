import { randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type TrustProxy, trustProxy } from './config-values.ts';
import { defaultRoutes, parseRoutes, type RoutesConfig, RoutesError } from './delivery/routes/config.ts';
import { type AssetsConfig, assetsConfig } from './domain/assets/config.ts';
import { DEFAULT_PLAN, PLANS } from './domain/plans/plans.ts';

/** Every setting Posthorn reads, from the environment, documented in README.md. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  publicUrl: string;
  appUrl: string;
  smtpRelay: string | undefined;
  /** Seconds a relay may take to greet or to answer a command before the delivery is deferred. */
  smtpRelayTimeoutSeconds: number;
  /**
   * The ways out and the rules choosing among them: POSTHORN_ROUTES's file, or one route named
   * `default` (the relay, else the dev mailbox).
   */
  routes: RoutesConfig;
  /** POSTHORN_ROUTES: the file the routes were read from; unset = the route `default`. */
  routesFile: string | undefined;
  /**
   * POSTHORN_SNS_TEST_CERT's certificate (PEM), for tests: SNS notifications whose SigningCertURL is
   * on this machine are checked against it. Unset (production): only SNS's own hosts are trusted.
   */
  snsTestCert: string | undefined;
  /**
   * For a simulated internet only: the HTTPS port of MTA-STS policy hosts (POSTHORN_MTA_STS_PORT,
   * 443) and a CA certificate they are checked against instead of the system's
   * (POSTHORN_MTA_STS_TEST_CA).
   */
  mtaSts: { port: number; ca: string | undefined };
  smtpPort: number;
  /** Implicit-TLS submission port (465 in production); null = not opened. */
  smtpTlsPort: number | null;
  /** PEM files for STARTTLS and implicit TLS; a self-signed pair is made in the data dir when unset. */
  tlsKeyFile: string | undefined;
  tlsCertFile: string | undefined;
  /** Allow AUTH without TLS (loopback testing only). */
  smtpAllowInsecureAuth: boolean;
  /** The submission server's own host name: its greeting and the Received header of submitted mail. */
  smtpHost: string;
  mxPort: number;
  /** Largest message the inbound MX takes, in bytes. */
  mxMaxBytes: number;
  /** Projects receive at <anything>@<project slug>.<inboundDomain>. */
  inboundDomain: string;
  /** Let webhooks reach private and loopback addresses over plain http (development, tests). */
  webhookAllowPrivate: boolean;
  /** Seconds before each webhook attempt: the first is the delay of the first attempt (0 = at once). */
  webhookSchedule: number[];
  dnsServers: string[];
  /** POSTHORN_PORT25_PROBE: the mail server `posthorn admin doctor` connects to, to see outbound port 25 open. */
  port25Probe: string;
  sharedDomain: string;
  /** The SPF record customers include (`include:` this host). */
  spfInclude: string;
  /** The MX host of return-path subdomains (where bounces come back). */
  inboundHost: string;
  systemFrom: string;
  secret: string;
  rateLimitPerSecond: number;
  signupsPerIp: number; // sign-up attempts (POST /v1/signup) per client IP an hour; 0: no limit
  workerConcurrency: number;
  /** Of workerConcurrency, the workers that deliver transactional mail only (at most all but one). */
  transactionalWorkers: number;
  /** A worker process's delivery scheduler: claimed messages waiting for a session, and in all, at most. */
  deliveryQueue: number;
  deliveryInFlight: number;
  poolSize: number;
  logLevel: string;
  /** `text`: readable lines; `json`: pino's JSON lines; `auto`: text on a terminal, JSON otherwise. */
  logFormat: 'auto' | 'text' | 'json';
  embeddedPgPort: number;
  /** Seconds to wait before each delivery retry; the last one repeats. */
  retrySchedule: number[];
  /** Give up (status `failed`) this long after a message was accepted. */
  retryForHours: number;
  /** A worker silent this long is presumed dead and its jobs are unlocked for others. */
  staleWorkerSeconds: number;
  /** The plan of every new workspace (signup and POST /workspaces). */
  defaultPlan: string;
  /**
   * POSTHORN_BULK_GATE: `enforce` refuses a campaign or flow whose bulk-sender checks fail (an admin
   * may override with a reason), `off` skips them. Never applied when all mail goes to the dev mailbox.
   */
  bulkGate: 'enforce' | 'off';
  /** The circuit breaker's thresholds (percentages) and the messages a rate is judged on at least. */
  breaker: {
    minMessages: number;
    bounceWarn: number;
    bounceStop: number;
    complaintWarn: number;
    complaintStop: number;
    /** POSTHORN_BREAKER_HOLDS_TRANSACTIONAL: a domain's or project's stop holds its transactional mail too. */
    holdsTransactional: boolean;
  };
  /**
   * Whose X-Forwarded-For (and -Proto, -Host) to believe: false = nobody's, the client is the TCP
   * peer; a hop count; or the addresses and CIDRs of the proxies in front.
   */
  trustProxy: TrustProxy;
  /**
   * POSTHORN_TERMS_URL: the operator's terms of service, where the server's `/terms` leads (every
   * terms box links there); unset = that page says no terms are published.
   */
  termsUrl: string | undefined;
  /** Bearer token of GET /metrics; unset = served to loopback clients only. */
  metricsToken: string | undefined;
  /**
   * Who may read the dev mailbox over HTTP (the dashboard's Mailbox): clients on this machine
   * (`local`), anyone who reaches the server (`open`), or nobody (`off`; `posthorn mailbox` still reads it).
   */
  devMailboxAccess: DevMailboxAccess;
  /** How long what grows without bound is kept; 0 = kept forever. */
  retention: RetentionPeriods;
  /** Projects' images: where they are kept (a folder or S3) and their limits. */
  assets: AssetsConfig;
}

/** How long each kind of prunable data is kept (README "Operations"). */
export interface RetentionPeriods {
  /** API and account-API request logs, in days. */
  requestLogsDays: number;
  /** Webhook delivery attempts, in days. */
  webhookAttemptsDays: number;
  /** Idempotency keys, in hours (at least 24: the API honours a key for 24 hours). */
  idempotencyHours: number;
  /** Sent emails' bodies (HTML, text, template data) and attachments, in days; the metadata stays. */
  messageBodiesDays: number;
  /** Received mail's raw source, in days; the parsed message stays. */
  inboundRawDays: number;
  /** Providers' feedback notifications (Amazon SES's events by SNS), in days; what they did to an email stays. */
  providerFeedbackDays: number;
}

export const DEV_MAILBOX_ACCESS = ['local', 'open', 'off'] as const;
export type DevMailboxAccess = (typeof DEV_MAILBOX_ACCESS)[number];

/** Fastify's `trustProxy`, limited to what cannot be forged by any client: never `true`. */
export type { TrustProxy } from './config-values.ts';

export { ConfigError } from './config-values.ts';

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min = 0, max = 65535 * 1000): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A percentage from 0 to 100, decimals allowed (0: never). */
function percentage(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || value > 100)
    throw new ConfigError(`${name} must be a percentage from 0 to 100, like 0.3, got "${raw}"`);
  return value;
}

function flag(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be 1 or 0 (true or false), got "${env[name]}"`);
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** An http(s) URL that may be left unset. */
function optionalUrl(env: Env, name: string): string | undefined {
  if (!env[name]?.trim()) return undefined;
  return url({ [name]: env[name]?.trim() }, name, '');
}

function retrySchedule(
  raw: string | undefined,
  name = 'POSTHORN_RETRY_SCHEDULE',
  fallback = [60, 300, 1800, 7200, 21600, 43200],
  allowZero = false,
): number[] {
  if (!raw) return fallback;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length === 0 || !parts.every((p) => /^\d+$/.test(p) && (allowZero || Number(p) > 0))) {
    throw new ConfigError(`${name} must be comma-separated whole seconds like "60,300,1800", got "${raw}"`);
  }
  return parts.map(Number);
}

function retention(env: Env): RetentionPeriods {
  const days = (name: string) => integer(env, name, 30, 0, 36_500);
  return {
    requestLogsDays: days('POSTHORN_RETENTION_REQUEST_LOGS_DAYS'),
    webhookAttemptsDays: days('POSTHORN_RETENTION_WEBHOOK_ATTEMPTS_DAYS'),
    idempotencyHours: integer(env, 'POSTHORN_RETENTION_IDEMPOTENCY_HOURS', 24, 24, 24 * 36_500),
    messageBodiesDays: days('POSTHORN_RETENTION_MESSAGE_BODIES_DAYS'),
    inboundRawDays: days('POSTHORN_RETENTION_INBOUND_RAW_DAYS'),
    providerFeedbackDays: days('POSTHORN_RETENTION_PROVIDER_FEEDBACK_DAYS'),
  };
}

function logFormat(env: Env, name: string): Config['logFormat'] {
  const raw = (env[name] ?? '').trim().toLowerCase() || 'auto';
  if (raw !== 'auto' && raw !== 'text' && raw !== 'json')
    throw new ConfigError(`${name} must be auto, text or json, got "${env[name]}"`);
  return raw;
}

function bulkGate(env: Env, name: string): Config['bulkGate'] {
  const raw = (env[name] ?? '').trim().toLowerCase() || 'enforce';
  if (raw !== 'enforce' && raw !== 'off')
    throw new ConfigError(
      `${name} must be enforce (campaigns and flows pass the bulk-sender checks first) or off, got "${env[name]}"`,
    );
  return raw;
}

function devMailboxAccess(env: Env, name: string): DevMailboxAccess {
  const raw = (env[name] ?? '').trim().toLowerCase() || 'local';
  const value = DEV_MAILBOX_ACCESS.find((v) => v === raw);
  if (!value)
    throw new ConfigError(
      `${name} must be local (the dev mailbox is shown only to clients on this machine), open (to anyone who reaches the server) or off, got "${env[name]}"`,
    );
  return value;
}

function plan(env: Env, name: string): string {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '') return DEFAULT_PLAN;
  const ids = PLANS.map((p) => p.id);
  if (!ids.includes(raw))
    throw new ConfigError(`${name} must be one of ${ids.join(', ')}, got "${env[name]}"`);
  return raw;
}

/** POSTHORN_ROUTES's file, checked; without it, the relay (or the dev mailbox) as the route `default`. */
function routes(env: Env, name: string, timeoutSeconds: number): RoutesConfig {
  const file = (env[name] ?? '').trim();
  if (file === '') return defaultRoutes(env.POSTHORN_SMTP_RELAY || undefined, timeoutSeconds);
  if (env.POSTHORN_SMTP_RELAY)
    throw new ConfigError(
      `POSTHORN_SMTP_RELAY and ${name} are both set: with a routes file, the relay is a route of type "smtp" in it`,
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${name}: ${file} is not valid JSON: ${(err as Error).message}`);
  }
  try {
    return parseRoutes(json);
  } catch (err) {
    if (!(err instanceof RoutesError)) throw err;
    throw new ConfigError(
      `${name}: ${file} has ${err.problems.length} problem(s):\n  ${err.problems.join('\n  ')}`,
    );
  }
}

/** A PEM certificate file (POSTHORN_SNS_TEST_CERT, POSTHORN_MTA_STS_TEST_CA), read and parsed at start. */
function certificateFile(env: Env, name: string): string | undefined {
  const file = (env[name] ?? '').trim();
  if (file === '') return undefined;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError(`${name}: ${file} is not a PEM certificate (-----BEGIN CERTIFICATE-----)`);
  }
  return pem;
}

/** Reads POSTHORN_SECRET, or the secret stored in the data dir (generated on first start). */
function loadSecret(env: Env, dataDir: string): string {
  const fromEnv = env.POSTHORN_SECRET;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (fromEnv.length < 32) throw new ConfigError('POSTHORN_SECRET must be at least 32 characters long');
    return fromEnv;
  }
  const file = path.join(dataDir, 'secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = path.resolve(env.POSTHORN_DATA_DIR || './.posthorn');
  const publicUrl = url(env, 'POSTHORN_PUBLIC_URL', `http://localhost:${port}`);
  const sharedDomain = (env.POSTHORN_SHARED_DOMAIN || 'posthorn.localhost').toLowerCase();
  if (env.POSTHORN_SMTP_RELAY) {
    try {
      const relay = new URL(env.POSTHORN_SMTP_RELAY);
      if (relay.protocol !== 'smtp:' && relay.protocol !== 'smtps:') throw new Error('protocol');
    } catch {
      throw new ConfigError('POSTHORN_SMTP_RELAY must look like smtp://user:pass@host:port (or smtps://)');
    }
  }
  const smtpRelayTimeoutSeconds = integer(env, 'POSTHORN_SMTP_RELAY_TIMEOUT', 60, 1, 3600);
  return {
    port,
    host,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    publicUrl,
    appUrl: url(env, 'POSTHORN_APP_URL', publicUrl),
    smtpRelay: env.POSTHORN_SMTP_RELAY || undefined,
    smtpRelayTimeoutSeconds,
    routes: routes(env, 'POSTHORN_ROUTES', smtpRelayTimeoutSeconds),
    routesFile: env.POSTHORN_ROUTES?.trim() || undefined,
    snsTestCert: certificateFile(env, 'POSTHORN_SNS_TEST_CERT'),
    mtaSts: {
      port: integer(env, 'POSTHORN_MTA_STS_PORT', 443, 1, 65535),
      ca: certificateFile(env, 'POSTHORN_MTA_STS_TEST_CA'),
    },
    smtpPort: integer(env, 'POSTHORN_SMTP_PORT', 2587, 0, 65535),
    smtpTlsPort: env.POSTHORN_SMTP_TLS_PORT ? integer(env, 'POSTHORN_SMTP_TLS_PORT', 0, 0, 65535) : null,
    tlsKeyFile: env.POSTHORN_TLS_KEY || undefined,
    tlsCertFile: env.POSTHORN_TLS_CERT || undefined,
    smtpAllowInsecureAuth: flag(env, 'POSTHORN_SMTP_ALLOW_INSECURE_AUTH'),
    mxPort: integer(env, 'POSTHORN_MX_PORT', 2525, 0, 65535),
    mxMaxBytes: integer(env, 'POSTHORN_MX_MAX_BYTES', 50 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    webhookAllowPrivate: flag(env, 'POSTHORN_WEBHOOK_ALLOW_PRIVATE'),
    webhookSchedule: retrySchedule(
      env.POSTHORN_WEBHOOK_SCHEDULE,
      'POSTHORN_WEBHOOK_SCHEDULE',
      [0, 5, 300, 1800, 7200, 18000, 36000, 36000],
      true,
    ),
    inboundDomain: (env.POSTHORN_INBOUND_DOMAIN || `inbound.${sharedDomain}`).toLowerCase(),
    dnsServers: (env.POSTHORN_DNS_SERVERS || '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    port25Probe: env.POSTHORN_PORT25_PROBE || 'gmail-smtp-in.l.google.com:25',
    sharedDomain,
    spfInclude: (env.POSTHORN_SPF_INCLUDE || `_spf.${sharedDomain}`).toLowerCase(),
    smtpHost: (env.POSTHORN_SMTP_HOST || `smtp.${sharedDomain}`).toLowerCase(),
    inboundHost: (env.POSTHORN_INBOUND_HOST || `mx.${sharedDomain}`).toLowerCase(),
    systemFrom: env.POSTHORN_SYSTEM_FROM || `Posthorn <no-reply@${sharedDomain}>`,
    secret: loadSecret(env, dataDir),
    rateLimitPerSecond: integer(env, 'POSTHORN_RATE_LIMIT', 100, 0, 1_000_000),
    signupsPerIp: integer(env, 'POSTHORN_SIGNUP_LIMIT', 20, 0, 1_000_000),
    workerConcurrency: integer(env, 'POSTHORN_WORKER_CONCURRENCY', 10, 1, 1000),
    transactionalWorkers: integer(env, 'POSTHORN_TRANSACTIONAL_WORKERS', 2, 0, 1000),
    deliveryQueue: integer(env, 'POSTHORN_DELIVERY_QUEUE', 200, 1, 1_000_000),
    deliveryInFlight: integer(env, 'POSTHORN_DELIVERY_IN_FLIGHT', 20_000, 1, 1_000_000),
    poolSize: integer(env, 'POSTHORN_PG_POOL_SIZE', 13, 1, 1000),
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: logFormat(env, 'POSTHORN_LOG_FORMAT'),
    embeddedPgPort: integer(env, 'POSTHORN_EMBEDDED_PG_PORT', 0, 0, 65535),
    retrySchedule: retrySchedule(env.POSTHORN_RETRY_SCHEDULE),
    retryForHours: integer(env, 'POSTHORN_RETRY_FOR_HOURS', 72, 0, 24 * 30),
    staleWorkerSeconds: integer(env, 'POSTHORN_STALE_WORKER_SECONDS', 60, 1, 86_400),
    defaultPlan: plan(env, 'POSTHORN_DEFAULT_PLAN'),
    bulkGate: bulkGate(env, 'POSTHORN_BULK_GATE'),
    breaker: {
      minMessages: integer(env, 'POSTHORN_BREAKER_MIN_MESSAGES', 200, 1, 100_000_000),
      bounceWarn: percentage(env, 'POSTHORN_BREAKER_BOUNCE_WARN', 2),
      bounceStop: percentage(env, 'POSTHORN_BREAKER_BOUNCE_STOP', 5),
      complaintWarn: percentage(env, 'POSTHORN_BREAKER_COMPLAINT_WARN', 0.1),
      complaintStop: percentage(env, 'POSTHORN_BREAKER_COMPLAINT_STOP', 0.3),
      holdsTransactional: flag(env, 'POSTHORN_BREAKER_HOLDS_TRANSACTIONAL'),
    },
    trustProxy: trustProxy(env, 'POSTHORN_TRUST_PROXY'),
    metricsToken: env.POSTHORN_METRICS_TOKEN || undefined,
    termsUrl: optionalUrl(env, 'POSTHORN_TERMS_URL'),
    devMailboxAccess: devMailboxAccess(env, 'POSTHORN_DEV_MAILBOX'),
    retention: retention(env),
    assets: assetsConfig(env, dataDir),
  };
}
