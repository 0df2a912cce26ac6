import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { routeView } from './delivery/routes/view.ts';
import type { Runtime } from './runtime.ts';

const LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};
// fields every line has, or that the text line already shows
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'role', 'err']);

/** One pino JSON line as a person reads it: time, level, role, message, then any other fields. */
export function readableLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = new Date(Number(entry.time) || Date.now()).toTimeString().slice(0, 8);
  const level = (LEVELS[Number(entry.level)] ?? 'info').padEnd(5);
  const role = entry.role ? `[${entry.role}] ` : '';
  const err = entry.err as { message?: string } | string | undefined;
  const extra = Object.entries(entry)
    .filter(([name]) => !SHOWN.has(name))
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  if (err) extra.push(`error=${typeof err === 'string' ? err : (err.message ?? JSON.stringify(err))}`);
  return `${time} ${level} ${role}${entry.msg ?? ''}${extra.length ? `  ${extra.join(' ')}` : ''}\n`;
}

/** Whether the log is readable lines: POSTHORN_LOG_FORMAT=text, or auto on a terminal. */
export function logsAsText(config: Pick<Config, 'logFormat'>): boolean {
  return config.logFormat === 'text' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
}

/** The program's logger: readable lines on a terminal (or POSTHORN_LOG_FORMAT=text), JSON otherwise. */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  if (!logsAsText(config)) return pino({ level: config.logLevel });
  return pino(
    { level: config.logLevel },
    { write: (line: string) => process.stdout.write(readableLine(line)) },
  );
}

/** The summary as a block of lines on a terminal, or one JSON entry (its lines in `summary`). */
export function announceStart(log: Logger, config: Config, runtime: Runtime): void {
  const lines = startupSummary(config, runtime);
  if (logsAsText(config)) process.stdout.write(`\n${lines.join('\n')}\n\n`);
  else log.info({ summary: lines.slice(1).map((line) => line.trim()) }, lines[0]);
}

/** Where a person finds what just started: the dashboard, the API and its docs, SMTP, where mail goes. */
export function startupSummary(config: Config, runtime: Runtime): string[] {
  const lines = ['Posthorn is running.'];
  if (runtime.url) {
    const api = runtime.url.replace(/\/$/, '');
    lines.push(`  Dashboard:  ${config.appUrl.replace(/\/$/, '')}/`);
    lines.push(`  API:        ${api}/v1   (docs: ${api}/v1/docs, OpenAPI: ${api}/v1/openapi.json)`);
  }
  if (runtime.smtp) {
    const tls = runtime.smtp.tlsPort ? `, implicit TLS on ${runtime.smtp.tlsPort}` : '';
    lines.push(
      `  SMTP:       submission on ${config.host}:${runtime.smtp.submissionPort}${tls} (password: an API key; user: any, or the project id with an all-access key); inbound MX on ${config.host}:${runtime.smtp.mxPort}`,
    );
  }
  if (runtime.worker) {
    const view = routeView(config);
    if (view.file) {
      // each route with its host, never its password
      lines.push(
        `  Mail out:   by the routes of ${view.file} (POSTHORN_ROUTES): ${view.targets().join(', ')}`,
      );
    } else if (config.smtpRelay) {
      const relay = new URL(config.smtpRelay);
      lines.push(`  Mail out:   through the relay ${relay.protocol}//${relay.host} (POSTHORN_SMTP_RELAY)`);
    } else {
      lines.push(
        '  Mail out:   kept in the dev mailbox, nothing leaves this machine (set POSTHORN_SMTP_RELAY to send for real);',
        '              read it with `npx posthorn mailbox` (list) and `npx posthorn mailbox <id>` (one message)',
      );
    }
  }
  lines.push(
    config.databaseUrl
      ? '  Database:   DATABASE_URL'
      : `  Database:   embedded PostgreSQL, data in ${runtime.embeddedPgDir ?? config.dataDir} (set DATABASE_URL to use your own)`,
  );
  if (runtime.url)
    lines.push('  First time? Open the dashboard, or run `npx posthorn signup` in another terminal.');
  return lines;
}
