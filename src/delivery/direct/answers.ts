import { Readable } from 'node:stream';
import type { SMTPConnectionSendInfo } from 'nodemailer/lib/smtp-connection';
import { isPermanent, type OutboundMessage, type RecipientResult } from '../transport.ts';
import type { Conn } from './session.ts';
import type { Site } from './sites.ts';

/** How a direct route's transaction is made and answered, recipient by recipient. */

export type Via = NonNullable<RecipientResult['via']>;

/** The same answer for every recipient of a transaction (or of a domain never reached). */
export function answerAll(
  to: string[],
  code: number,
  response: string,
  extra: {
    via?: Via;
    bounceType?: 'hard' | 'block';
    heldUntil?: number;
    heldBy?: 'site' | 'posthorn';
    retryAfterMs?: number;
  } = {},
): RecipientResult[] {
  return to.map((recipient) => ({
    recipient,
    accepted: false,
    final: true,
    responseCode: code,
    response,
    ...extra,
  }));
}

/** Deferred answers carry the wait of their site's retry schedule, when it has one. */
export function withSiteRetry(
  results: RecipientResult[],
  site: Site,
  message: OutboundMessage,
): RecipientResult[] {
  const schedule = site.limits.retrySchedule;
  if (!schedule || schedule.length === 0) return results;
  const waitMs = schedule[Math.min(Math.max(message.attempt, 1) - 1, schedule.length - 1)] * 1000;
  return results.map((r) =>
    r.accepted || isPermanent(r.responseCode) || r.heldUntil !== undefined || r.retryAfterMs !== undefined
      ? r
      : { ...r, retryAfterMs: waitMs },
  );
}

/** The server's answer to each recipient of a transaction it took. */
export function answersOf(to: string[], info: SMTPConnectionSendInfo, via: Via): RecipientResult[] {
  const refused = new Map((info.rejectedErrors ?? []).map((e) => [String(e.recipient).toLowerCase(), e]));
  return to.map((recipient): RecipientResult => {
    const e = refused.get(recipient.toLowerCase());
    if (!e)
      return { recipient, accepted: true, final: true, responseCode: 250, response: info.response, via };
    const code = e.responseCode;
    const bounce = isPermanent(code) ? { bounceType: 'hard' as const } : {};
    return {
      recipient,
      accepted: false,
      final: true,
      responseCode: code,
      response: e.response ?? e.message,
      via,
      ...bounce,
    };
  });
}

/**
 * One transaction over a connection, within `deadlineMs` in all (a server that answers a byte at
 * a time resets every idle timeout, never this one: past it the connection is closed and the
 * transaction fails as a lost connection, `ETIMEDOUT`); `read` tells whether a byte of the message
 * went out.
 */
export function transact(conn: Conn, from: string, to: string[], raw: Buffer, deadlineMs: number) {
  const body = new Readable({
    read() {
      this.push(raw);
      this.push(null);
    },
  });
  const done = new Promise<SMTPConnectionSendInfo>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      reject(
        Object.assign(
          new Error(
            `451 4.4.2 ${conn.mx} [${conn.address}] took longer than ${deadlineMs / 1000} s to answer the message`,
          ),
          {
            code: 'ETIMEDOUT',
            response: `451 4.4.2 ${conn.mx} took longer than ${deadlineMs / 1000} s to answer the message`,
          },
        ),
      );
      conn.connection.close();
    }, deadlineMs);
    conn.connection.send({ from, to: [...to] }, body, (err, info) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(info as SMTPConnectionSendInfo);
    });
  });
  return { done, read: () => body.readableDidRead };
}
