import type { Readable } from 'node:stream';
import {
  AuthenticationError,
  DomainError,
  PlanFeatureError,
  SendRefusedError,
  ValidationError,
} from '../domain/core/errors.ts';
import { UnknownRecipientError } from '../domain/inbound/recipients.ts';

export interface TlsOptions {
  key: string;
  cert: string;
}

/** An error smtp-server sends as the reply: `responseCode` and a one-line message. */
export type SmtpReply = Error & { responseCode: number };

function reply(code: number, enhanced: string, message: string): SmtpReply {
  const text = `${enhanced} ${message}`.replace(/[\r\n]+/g, ' ');
  return Object.assign(new Error(text), { responseCode: code });
}

/**
 * Maps an error to an SMTP reply: a permanent domain refusal is 5xx, a temporary one 4xx, and the
 * reason is the reply text. Anything unexpected is a temporary failure: the client retries later.
 */
export function smtpError(err: unknown, fallbackCode: number): SmtpReply {
  if (err instanceof Error && typeof (err as Partial<SmtpReply>).responseCode === 'number') {
    return err as SmtpReply;
  }
  if (err instanceof AuthenticationError)
    return reply(fallbackCode === 530 ? 530 : 535, '5.7.8', err.message);
  if (err instanceof UnknownRecipientError) return reply(550, '5.1.1', err.message);
  if (err instanceof SendRefusedError) return reply(550, '5.7.1', err.message);
  if (err instanceof PlanFeatureError) return reply(550, '5.7.1', err.message);
  if (err instanceof ValidationError) return reply(550, '5.6.0', err.message);
  if (err instanceof DomainError) {
    return err.permanent ? reply(550, '5.7.1', err.message) : reply(451, '4.7.1', err.message);
  }
  return reply(451, '4.3.0', 'Temporary server error: nothing was accepted, try again shortly');
}

/** Reads a DATA stream into memory, stopping to keep bytes once past `maxBytes`. */
export function collectMessage(
  stream: Readable & { sizeExceeded?: boolean },
  maxBytes: number,
): Promise<{ raw: Buffer; tooBig: boolean; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    stream.on('error', reject);
    stream.on('end', () =>
      resolve({
        raw: Buffer.concat(chunks),
        tooBig: size > maxBytes || stream.sizeExceeded === true,
        size,
      }),
    );
  });
}
