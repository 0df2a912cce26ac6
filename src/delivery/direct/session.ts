import type { TLSSocket } from 'node:tls';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SessionLeases } from '../session-pool.ts';
import type { SmtpSendError } from '../smtp-pool.ts';

/** What a lane's connections are, and how their failures read (lanes.ts). */

/** An open SMTP session to one of the site's hosts. */
export interface Conn {
  connection: SMTPConnection;
  mx: string;
  address: string;
  /** Transactions it carried (taken or refused). */
  carried: number;
  /** Over TLS with a certificate valid for the MX host name (what MTA-STS `enforce` needs). */
  verified: boolean;
  dead: boolean;
  idleTimer: NodeJS.Timeout | null;
  /** Counted in the connection leases every worker process shares (given back when it ends). */
  leased?: boolean;
}

/**
 * A site's connection cap across every worker process (PostgreSQL: domain/shaping/leases.ts):
 * `take` counts one more connection to the lane when the processes' sum is below `max`, `give`
 * counts one less. The one session pool asks it (session-pool.ts).
 */
export type ConnectionLeases = SessionLeases;

/** A failure for now, before any transaction: `slowDown` when the site asked us to. */
export class Temporary extends Error {
  readonly code: number;
  readonly slowDown: boolean;
  constructor(message: string, code = 451, slowDown = false) {
    super(message);
    this.code = code;
    this.slowDown = slowDown;
  }
}

/**
 * The site holds its mail for now (it asked to slow down): `until` when, `reason` its answer. Or,
 * `busy`, this process holds more messages waiting for the lane's connections than it keeps
 * (MAX_WAITING): they go back to the queue for a moment rather than fill the process.
 */
export class Held extends Error {
  readonly until: number;
  readonly reason: string;
  readonly busy: boolean;
  constructor(until: number, reason: string, busy = false) {
    super(reason);
    this.until = until;
    this.reason = reason;
    this.busy = busy;
  }
}

/** Google's `4.7.28` rate limits, Microsoft's `451 4.7.650`, Yahoo's `[TSS04]`, and any 421 (Google's `421 4.7.0`). */
export function meansSlowDown(code: number | undefined, response: string): boolean {
  if (code === 421) return true;
  if (code === undefined || code < 400 || code >= 500) return false;
  // not any 4xx: greylisting (451 4.7.1) or a full mailbox is about one message, not the pace
  return /\b4\.7\.(28|650)\b|TSS0\d|rate limit|too many (connections|messages)|throttl/i.test(response);
}

/** The TLS version negotiated (`TLSv1.3`), `… unverified` when the certificate was not valid; null: in clear. */
export function tlsOf(connection: SMTPConnection): string | null {
  if (!connection.secure) return null;
  const socket = (connection as unknown as { _socket?: TLSSocket })._socket;
  const version = socket?.getProtocol?.() ?? 'TLS';
  return socket?.authorized ? version : `${version} unverified`;
}

/** Whether the session is over TLS with a certificate valid for the name asked for. */
export function isVerified(connection: SMTPConnection): boolean {
  const socket = (connection as unknown as { _socket?: TLSSocket })._socket;
  return connection.secure && socket?.authorized === true;
}

/** A failure of the STARTTLS handshake itself (a version or cipher nobody shares, a broken server). */
export function tlsFailed(e: SmtpSendError): boolean {
  return (
    e.code === 'ETLS' || e.command === 'STARTTLS' || /\bSSL routines\b|\btls\w* alert\b/i.test(e.message)
  );
}

/** How connections are opened: the port and patience of the route. */
export interface Dialing {
  port: number;
  timeoutMs: number;
  /** Certificates to trust instead of the system's (a test network's CA). */
  ca?: string[];
}
