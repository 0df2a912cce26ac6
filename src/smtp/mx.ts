import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { DomainContext } from '../domain/core/context.ts';
import { type Receipt, receiveMessage } from '../domain/inbound/receive.ts';
import { acceptsRecipient, type InboundTarget } from '../domain/inbound/recipients.ts';
import { countSmtpSession } from '../domain/maintenance/metrics.ts';
import { collectMessage, smtpError, type TlsOptions } from './common.ts';

const MAX_RECIPIENTS = 100;

interface MxSession {
  targets: Map<string, InboundTarget>;
}

function stateOf(session: SMTPServerSession): MxSession {
  const s = session as unknown as { posthorn?: MxSession };
  s.posthorn ??= { targets: new Map() };
  return s.posthorn;
}

function envelopeOf(session: SMTPServerSession) {
  return {
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
    recipients: stateOf(session).targets,
    remoteIp: session.remoteAddress,
    helo: session.hostNameAppearsAs,
  };
}

/** The text of the 250 reply: what became of the message. */
function describe(receipt: Receipt): string {
  return [
    ...receipt.reports.map((r) => `${r.kind} for ${r.emailId ?? 'an unknown message'}`),
    ...(receipt.notAReport ? ['not a bounce or complaint report: ignored'] : []),
    ...receipt.stored.map((id) => `stored as ${id}`),
    ...(receipt.dmarc.length > 0 ? [`reports: ${countsOf(receipt.dmarc)}`] : []),
  ].join('; ');
}

/** What became of a message's DMARC and TLS reports: `1 stored, 2 unreadable (kept)`. */
function countsOf(outcomes: Receipt['dmarc']): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(o, (counts.get(o) ?? 0) + 1);
  const shown: Record<string, string> = {
    unreadable: 'unreadable (kept)',
    dropped: "dropped (past the reporter's reports of the day)",
  };
  return [...counts].map(([o, n]) => `${n} ${shown[o] ?? o}`).join(', ');
}

/**
 * The inbound MX: takes mail only for the addresses Posthorn serves (projects' inbound addresses,
 * verified domains with inbound enabled, VERP bounce addresses of project and system mail, the
 * feedback-loop address) and refuses every other recipient at RCPT with 550. What to do with a
 * message is the domain's (receiveMessage); this door speaks SMTP.
 */
export function createMxServer(opts: { ctx: DomainContext; log: Logger; tls: TlsOptions }): SMTPServer {
  const { ctx, log } = opts;

  const server = new SMTPServer({
    name: ctx.config.inboundHost,
    banner: 'Posthorn inbound MX',
    key: opts.tls.key,
    cert: opts.tls.cert,
    size: ctx.config.mxMaxBytes,
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    disableReverseLookup: true,
    closeTimeout: 5_000,
    // our replies carry their own enhanced codes (5.7.1 for a policy refusal, not the table's 5.1.1)
    hideENHANCEDSTATUSCODES: true,
    onConnect(_session, callback) {
      countSmtpSession('mx');
      callback();
    },
    onMailFrom(_address, session, callback) {
      stateOf(session).targets.clear();
      callback();
    },
    onRcptTo(address, session, callback) {
      const state = stateOf(session);
      if (state.targets.size >= MAX_RECIPIENTS) {
        return callback(Object.assign(new Error('4.5.3 Too many recipients'), { responseCode: 452 }));
      }
      acceptsRecipient(ctx, address.address).then(
        (target) => {
          state.targets.set(address.address.toLowerCase(), target);
          callback();
        },
        (err) => callback(smtpError(err, 451)),
      );
    },
    onData(stream, session, callback) {
      collectMessage(stream, ctx.config.mxMaxBytes)
        .then(async (collected) => {
          if (collected.tooBig) {
            throw Object.assign(
              new Error(`5.3.4 Message too big: the limit is ${ctx.config.mxMaxBytes} bytes`),
              { responseCode: 552 },
            );
          }
          const receipt = await receiveMessage(ctx, envelopeOf(session), collected.raw);
          callback(null, `2.0.0 Accepted: ${describe(receipt)}`);
        })
        .catch((err) => {
          if (typeof (err as { responseCode?: unknown }).responseCode !== 'number')
            log.error({ err }, 'inbound message failed');
          callback(smtpError(err, 451));
        });
    },
  });
  server.on('error', (err) => log.warn({ err: err.message }, 'MX connection error'));
  return server;
}
