import { execFile } from 'node:child_process';
import nodemailer from 'nodemailer';

/** What nodemailer's sendMail takes. */
export type MailOptions = Parameters<ReturnType<typeof nodemailer.createTransport>['sendMail']>[0];

import type { TestServer } from './server.ts';

export interface SmtpAttempt {
  ok: boolean;
  /** The server's reply code (for a refusal) and text. */
  code?: number;
  response: string;
  messageId?: string;
}

/** A client session against the submission port: nodemailer's SMTP client, STARTTLS required. */
export async function submit(
  server: TestServer,
  auth: { user: string; pass: string } | null,
  message: MailOptions,
  opts: { ignoreTLS?: boolean; port?: number; secure?: boolean } = {},
): Promise<SmtpAttempt> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: opts.port ?? server.runtime.smtp?.submissionPort,
    secure: opts.secure ?? false,
    requireTLS: !opts.ignoreTLS && !opts.secure,
    ignoreTLS: opts.ignoreTLS ?? false,
    // the development certificate is self-signed
    tls: { rejectUnauthorized: false },
    ...(auth ? { auth } : {}),
    connectionTimeout: 10_000,
  });
  try {
    const info = await transport.sendMail(message);
    return { ok: true, response: info.response, messageId: info.messageId };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  } finally {
    transport.close();
  }
}

/** Plain SMTP to the inbound MX (no TLS, no AUTH), as another mail server would deliver. */
export async function deliverToMx(
  server: TestServer,
  envelope: { from: string; to: string[] },
  raw: string | Buffer,
): Promise<SmtpAttempt> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.runtime.smtp?.mxPort,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 10_000,
    socketTimeout: 120_000,
  });
  try {
    const info = await transport.sendMail({ envelope, raw });
    return { ok: true, response: info.response };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  } finally {
    transport.close();
  }
}

/** Runs Debian's `swaks` (an independent SMTP client); resolves with its exit code and transcript. */
export function swaks(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('swaks', args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** A resolver for mailauth's verifiers that answers the shared domain's DKIM key from the database. */
export async function sharedDkimResolver(server: TestServer) {
  const row = await server.runtime.ctx.db
    .selectFrom('dkim_keys')
    .selectAll()
    .where('project_id', 'is', null)
    .executeTakeFirstOrThrow();
  return async (name: string, type: string) => {
    if (type === 'TXT' && name === `${row.selector}._domainkey.${row.domain}`)
      return [[`v=DKIM1; k=rsa; p=${row.public_key}`]];
    throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
  };
}
