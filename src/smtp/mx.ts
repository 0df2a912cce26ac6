import { type AuthenticateResult, authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { DomainContext } from '../domain/context.ts';
import { createDnsResolve } from '../domain/dns-lookup.ts';
import { type InboundAuth, storeInbound } from '../domain/inbound/messages.ts';
import { type InboundTarget, resolveInboundRecipient } from '../domain/inbound/recipients.ts';
import { applyMailReport } from '../domain/inbound/reports.ts';
import { parseMailReport } from '../mail/reports.ts';
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

function summariseAuth(result: AuthenticateResult): InboundAuth {
  return {
    spf: result.spf ? result.spf.status.result : 'none',
    dkim: result.dkim.results.map((r) => ({
      domain: r.signingDomain ?? null,
      selector: r.selector ?? null,
      result: r.status?.result ?? 'none',
    })),
    dmarc: result.dmarc ? result.dmarc.status.result : 'none',
    dmarc_policy: result.dmarc ? result.dmarc.policy || null : null,
    arc: result.arc ? result.arc.status.result : 'none',
    authentication_results: result.headers.trim(),
  };
}

/**
 * The inbound MX: takes mail only for the addresses Posthorn serves (projects' inbound addresses,
 * verified domains with inbound enabled, VERP bounce addresses of project and system mail, the
 * feedback-loop address) and refuses every other recipient at RCPT with 550. Received mail is
 * parsed, authenticated (SPF, DKIM, DMARC, ARC) and stored; bounce and complaint reports update the
 * messages they name.
 */
export function createMxServer(opts: { ctx: DomainContext; log: Logger; tls: TlsOptions }): SMTPServer {
  const { ctx, log } = opts;
  const resolver = createDnsResolve(ctx.config.dnsServers);

  async function deliver(session: SMTPServerSession, raw: Buffer): Promise<string> {
    const entries = [...stateOf(session).targets.entries()];
    const targets = entries.map(([, t]) => t);
    const projects = new Set<string>();
    const reports: (string | null)[] = [];
    for (const t of targets) {
      if (t.kind === 'inbound') projects.add(t.projectId);
      if (t.kind === 'report') reports.push(t.emailId);
    }
    const done: string[] = [];
    if (reports.length > 0) {
      const report = await parseMailReport(raw);
      if (report) {
        for (const emailId of new Set(reports)) {
          const outcome = await applyMailReport(ctx, emailId, report);
          const about = outcome.systemEmailId ? `system email ${outcome.systemEmailId}` : outcome.emailId;
          done.push(`${report.kind} for ${about ?? 'an unknown message'}`);
        }
      } else {
        done.push('not a bounce or complaint report: ignored');
      }
    }
    if (projects.size > 0) {
      const parsed = await simpleParser(raw, {
        skipTextToHtml: true,
        skipTextLinks: true,
        skipImageLinks: true,
      });
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : null;
      const auth = summariseAuth(
        await authenticate(raw, {
          ip: session.remoteAddress,
          helo: session.hostNameAppearsAs,
          sender: mailFrom ?? '',
          mta: ctx.config.inboundHost,
          resolver,
        }),
      );
      for (const projectId of projects) {
        const rcptTo = entries
          .filter(([, t]) => t.kind === 'inbound' && t.projectId === projectId)
          .map(([address]) => address);
        const id = await storeInbound(ctx, {
          projectId,
          raw,
          parsed,
          auth,
          envelope: { mailFrom, rcptTo, remoteIp: session.remoteAddress, helo: session.hostNameAppearsAs },
        });
        done.push(`stored as ${id}`);
      }
    }
    return done.join('; ');
  }

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
    onMailFrom(_address, session, callback) {
      stateOf(session).targets.clear();
      callback();
    },
    onRcptTo(address, session, callback) {
      const state = stateOf(session);
      if (state.targets.size >= MAX_RECIPIENTS) {
        return callback(Object.assign(new Error('4.5.3 Too many recipients'), { responseCode: 452 }));
      }
      resolveInboundRecipient(ctx, address.address).then(
        (target) => {
          if (!target) {
            return callback(
              Object.assign(new Error(`5.1.1 <${address.address}>: no such mailbox here (relaying denied)`), {
                responseCode: 550,
              }),
            );
          }
          if (target.kind === 'refused') {
            return callback(Object.assign(new Error(`5.7.1 ${target.reason}`), { responseCode: 550 }));
          }
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
          const result = await deliver(session, collected.raw);
          callback(null, `2.0.0 Accepted: ${result}`);
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
