import type { SMTPConnectionSendInfo } from 'nodemailer/lib/smtp-connection';
import { type PhaseTimeouts, RFC_PHASE_TIMEOUTS } from '../routes/direct-config.ts';
import { messageBody } from '../smtp-pool.ts';
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
 * What nodemailer's connection writes each command with, and reads each reply with (wrapped for a
 * transaction, to see its steps).
 */
type Wire = {
  _sendCommand(str: string, logStr?: string): void;
  _processResponse(): unknown;
  _responseActions: unknown[];
};

/** A transaction's failure for a deadline (`what` says which): the connection is closed, the message deferred. */
function timedOut(conn: Conn, what: string): Error {
  const response = `451 4.4.2 ${conn.mx} ${what}`;
  return Object.assign(new Error(`${response} [${conn.address}]`), { code: 'ETIMEDOUT', response });
}

/** The deadline of a command of the envelope, by its verb (null: not one of them). */
function stepOf(command: string, phases: PhaseTimeouts): { what: string; seconds: number } | null {
  if (/^MAIL FROM/i.test(command)) return { what: 'did not answer MAIL FROM', seconds: phases.mail };
  if (/^RCPT TO/i.test(command)) return { what: 'did not answer RCPT TO', seconds: phases.rcpt };
  if (/^DATA\b/i.test(command)) return { what: 'did not answer DATA', seconds: phases.data };
  return null;
}

/**
 * One transaction over a connection, within a deadline for each step (RFC 5321 §4.5.3.2: MAIL FROM,
 * each RCPT TO, DATA, sending the data, the answer to the final dot; `phases`, in seconds) and
 * `deadlineMs` in all. Pipelined commands each keep their own: the reply the server owes next is
 * due by its command's deadline. A server that answers a byte at a time resets every idle timeout,
 * never these: past one the connection is closed and the transaction fails as a lost connection
 * (`ETIMEDOUT`), saying which step did not finish. `read` tells whether a byte of the message went
 * out.
 */
export function transact(
  conn: Conn,
  from: string,
  to: string[],
  raw: Buffer,
  deadlineMs: number,
  phases: PhaseTimeouts = RFC_PHASE_TIMEOUTS,
) {
  let onRead = () => {};
  // read only once the server said 354; small messages leave with their final dot in one write
  const { body, done: uncork } = messageBody(conn.connection, raw, () => onRead());
  const wire = conn.connection as unknown as Wire;
  const done = new Promise<SMTPConnectionSendInfo>((resolve, reject) => {
    let settled = false;
    let step: NodeJS.Timeout | undefined;
    // the envelope's commands sent and not yet answered, each with when its reply is due
    const owed: { what: string; seconds: number; due: number }[] = [];
    const end = (err: Error | null, info?: SMTPConnectionSendInfo, timeout = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      clearTimeout(step);
      uncork();
      // the connection's own writer and reader again, for the next transaction
      delete (wire as Partial<Wire>)._sendCommand;
      delete (wire as Partial<Wire>)._processResponse;
      if (timeout) conn.connection.close();
      if (err) reject(err);
      else resolve(info as SMTPConnectionSendInfo);
    };
    const arm = (what: string, seconds: number, atMs = Date.now() + seconds * 1000) => {
      clearTimeout(step);
      step = setTimeout(
        () => end(timedOut(conn, `${what} within ${seconds} s`), undefined, true),
        Math.max(0, atMs - Date.now()),
      );
    };
    const total = setTimeout(
      () =>
        end(timedOut(conn, `took longer than ${deadlineMs / 1000} s to answer the message`), undefined, true),
      deadlineMs,
    );
    const write = wire._sendCommand;
    wire._sendCommand = function (this: Wire, str: string, logStr?: string) {
      const next = stepOf(str, phases);
      if (next) {
        owed.push({ ...next, due: Date.now() + next.seconds * 1000 });
        if (owed.length === 1) arm(next.what, next.seconds);
      }
      return write.call(this, str, logStr);
    };
    const read = wire._processResponse;
    wire._processResponse = function (this: Wire) {
      const waiting = this._responseActions[0];
      const result = read.call(this);
      // a reply was taken: the next one owed is due by its own command's deadline
      if (this._responseActions[0] !== waiting && owed.shift()) {
        const head = owed[0];
        if (head) arm(head.what, head.seconds, head.due);
        else clearTimeout(step);
      }
      return result;
    };
    onRead = () => arm('did not take the data', phases.dataBlock);
    body.once('end', () => arm('did not answer the end of the data', phases.dataDone));
    conn.connection.send({ from, to: [...to] }, body, (err, info) =>
      end(err, info as SMTPConnectionSendInfo),
    );
  });
  return { done, read: () => body.readableDidRead };
}
