import { execFile } from 'node:child_process';
import net from 'node:net';
import tls from 'node:tls';
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
  opts: { ignoreTLS?: boolean; port?: number; secure?: boolean; ehloName?: string } = {},
): Promise<SmtpAttempt> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    ...(opts.ehloName ? { name: opts.ehloName } : {}),
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

/** One SMTP reply: its code and its text lines (without the code). */
export interface RawReply {
  code: number;
  lines: string[];
}

/**
 * A hand-driven SMTP conversation on a raw socket, for what a client library hides: the greeting and
 * the EHLO keywords before and after STARTTLS. Only for short exchanges (greeting, EHLO, STARTTLS,
 * AUTH, MAIL): each command waits for its one reply.
 */
export class RawSmtpSession {
  private socket: net.Socket | tls.TLSSocket;
  private buffered = '';
  private waiting: (() => void) | null = null;
  private closed: Error | null = null;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.listen(socket);
  }

  /** Connects and reads the greeting. */
  static async connect(port: number): Promise<{ session: RawSmtpSession; greeting: RawReply }> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const session = new RawSmtpSession(socket);
    return { session, greeting: await session.reply() };
  }

  private listen(socket: net.Socket | tls.TLSSocket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      this.waiting?.();
    });
    socket.on('error', (err) => {
      this.closed = err;
      this.waiting?.();
    });
    socket.on('close', () => {
      this.closed ??= new Error('the server closed the connection');
      this.waiting?.();
    });
  }

  /** Reads one complete (possibly multi-line) reply. */
  private async reply(): Promise<RawReply> {
    for (;;) {
      const lines = this.buffered.split('\r\n');
      // the last element is an unfinished line (or ''): a reply ends with a complete `NNN ` line
      const last = lines.slice(0, -1).findIndex((l) => /^\d{3}( |$)/.test(l));
      if (last >= 0) {
        this.buffered = lines.slice(last + 1).join('\r\n');
        const reply = lines.slice(0, last + 1);
        return { code: Number(reply[last].slice(0, 3)), lines: reply.map((l) => l.slice(4)) };
      }
      if (this.closed) throw this.closed;
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
      this.waiting = null;
    }
  }

  /** Sends one command line and reads its reply. */
  async command(line: string): Promise<RawReply> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  /** STARTTLS, then the TLS handshake over the same socket (the development certificate is self-signed). */
  async startTls(): Promise<RawReply> {
    const reply = await this.command('STARTTLS');
    if (reply.code !== 220) return reply;
    const plain = this.socket as net.Socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    this.socket = secure;
    this.listen(secure);
    return reply;
  }

  close() {
    this.socket.destroy();
  }
}

/**
 * Runs Debian's `swaks` (an independent SMTP client; the interop suite only); resolves with its exit
 * code and transcript. A missing swaks is said in the output rather than passing as an empty transcript.
 */
export function swaks(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('swaks', args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      const missing =
        err?.code === 'ENOENT'
          ? 'swaks is not installed: apt-get install swaks libio-socket-ssl-perl libnet-ssleay-perl\n'
          : '';
      resolve({ code, output: `${missing}${stdout}${stderr}` });
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
