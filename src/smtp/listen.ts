import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { SMTPServer } from 'smtp-server';
import type { DomainContext } from '../domain/core/context.ts';
import type { RequestLogWriter } from '../domain/keys/request-log.ts';
import { createMxServer } from './mx.ts';
import { createSubmissionServer } from './submission.ts';
import { loadTlsPair } from './tls.ts';

export interface SmtpDoors {
  submissionPort: number;
  /** The implicit-TLS submission port, when POSTHORN_SMTP_TLS_PORT is set. */
  tlsPort: number | null;
  mxPort: number;
  close(): Promise<void>;
}

function listen(server: SMTPServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve((server.server.address() as AddressInfo).port);
    });
  });
}

function close(server: SMTPServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Opens the SMTP doors: submission (STARTTLS, optional implicit TLS) and the inbound MX. */
export async function listenSmtp(opts: {
  ctx: DomainContext;
  log: Logger;
  requestLog?: RequestLogWriter;
}): Promise<SmtpDoors> {
  const { ctx, log } = opts;
  const { config } = ctx;
  const tls = await loadTlsPair(config);
  const servers: SMTPServer[] = [];
  const submission = createSubmissionServer({ ...opts, tls });
  servers.push(submission);
  const submissionPort = await listen(submission, config.smtpPort, config.host);
  let tlsPort: number | null = null;
  if (config.smtpTlsPort !== null) {
    const implicit = createSubmissionServer({ ...opts, tls, secure: true });
    servers.push(implicit);
    tlsPort = await listen(implicit, config.smtpTlsPort, config.host);
  }
  const mx = createMxServer({ ctx, log, tls });
  servers.push(mx);
  const mxPort = await listen(mx, config.mxPort, config.host);
  log.info(
    `SMTP submission on ${config.host}:${submissionPort}${tlsPort ? ` (implicit TLS on ${tlsPort})` : ''}, inbound MX on ${config.host}:${mxPort}; TLS certificate ${tls.source}`,
  );
  return {
    submissionPort,
    tlsPort,
    mxPort,
    close: async () => {
      await Promise.all(servers.map(close));
    },
  };
}
