import { type AuthenticateResult, authenticate } from 'mailauth';
import { parseMail } from '../../mail/parsed.ts';
import { type MailReport, parseMailReport } from '../../mail/reports.ts';
import type { DomainContext } from '../core/context.ts';
import { readReports } from '../dmarc/read.ts';
import { type ReportSender, type StoreOutcome, storeReports } from '../dmarc/store.ts';
import { createDnsResolve } from '../sending-domains/dns-lookup.ts';
import { type InboundAuth, storeInbound } from './messages.ts';
import type { InboundTarget } from './recipients.ts';
import { applyMailReport, type ReportOutcome } from './reports.ts';

/** What the MX knows of a message besides its bytes: who sent it, from where, and to whom. */
export interface ReceivedEnvelope {
  mailFrom: string | null;
  /** Each accepted recipient (lower-cased) with where `acceptsRecipient` said its mail goes. */
  recipients: Map<string, InboundTarget>;
  remoteIp: string;
  helo: string;
}

/** What became of a received message. */
export interface Receipt {
  /** The bounce or complaint report applied for each report address it came to. */
  reports: (ReportOutcome & { kind: MailReport['kind'] })[];
  /** Mail to a report address that was no bounce or complaint report: dropped. */
  notAReport: boolean;
  /** The inbound messages stored, one per project it was addressed to. */
  stored: string[];
  /** What became of each DMARC or TLS report it carried (dmarc/store.ts). */
  dmarc: StoreOutcome[];
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

/** mailauth's verdicts on a received message, as the MX saw it arrive. */
function authenticateReceived(ctx: Pick<DomainContext, 'config'>, envelope: ReceivedEnvelope, raw: Buffer) {
  return authenticate(raw, {
    ip: envelope.remoteIp,
    helo: envelope.helo,
    sender: envelope.mailFrom ?? '',
    mta: ctx.config.inboundHost,
    resolver: createDnsResolve(ctx.config.dnsServers),
  });
}

/**
 * Who sent a DMARC or TLS report: the domain of its mail's From, proved when the mail passes DMARC
 * for it (the report addresses are public: anyone can mail one).
 */
function reportSender(result: AuthenticateResult, from: string | null): ReportSender {
  const dmarc = result.dmarc ? result.dmarc : null;
  const authenticated = dmarc?.status.result === 'pass';
  const domain = (authenticated ? dmarc?.status.header?.from : null) ?? from?.split('@').pop() ?? null;
  return { domain: domain?.toLowerCase() ?? null, authenticated };
}

/**
 * Takes a message the MX accepted: mail to report addresses is read as a bounce or complaint
 * report and applied to the message it names; DMARC and TLS reports are read (in the report
 * thread) and kept for each domain addressed, with whether their mail was authenticated; mail to
 * projects is parsed and stored for each project with the recipients that were its own. The
 * message is authenticated (SPF, DKIM, DMARC, ARC) once, for the reports and the projects.
 */
export async function receiveMessage(
  ctx: Pick<DomainContext, 'config' | 'db'>,
  envelope: ReceivedEnvelope,
  raw: Buffer,
): Promise<Receipt> {
  const projects = new Map<string, string[]>();
  const reportedIds = new Set<string | null>();
  const dmarcDomains = new Set<string>();
  for (const [address, target] of envelope.recipients) {
    if (target.kind === 'report') reportedIds.add(target.emailId);
    else if (target.kind === 'dmarc') dmarcDomains.add(target.domainId);
    else projects.set(target.projectId, [...(projects.get(target.projectId) ?? []), address]);
  }
  const receipt: Receipt = { reports: [], notAReport: false, stored: [], dmarc: [] };
  let authenticated: Promise<AuthenticateResult> | null = null;
  const verdicts = () => {
    authenticated ??= authenticateReceived(ctx, envelope, raw);
    return authenticated;
  };
  if (dmarcDomains.size > 0) {
    const [read, result] = await Promise.all([readReports(raw, envelope.remoteIp), verdicts()]);
    const sender = reportSender(result, read.from);
    for (const domainId of dmarcDomains)
      receipt.dmarc.push(...(await storeReports(ctx, domainId, read.reports, raw, sender)));
  }
  if (reportedIds.size > 0) {
    const report = await parseMailReport(raw);
    if (!report) receipt.notAReport = true;
    else {
      for (const emailId of reportedIds)
        receipt.reports.push({ kind: report.kind, ...(await applyMailReport(ctx, emailId, report)) });
    }
  }
  if (projects.size > 0) {
    const parsed = await parseMail(raw, {
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
    });
    const auth = summariseAuth(await verdicts());
    for (const [projectId, rcptTo] of projects) {
      const { mailFrom, remoteIp, helo } = envelope;
      receipt.stored.push(
        await storeInbound(ctx, {
          projectId,
          raw,
          parsed,
          auth,
          envelope: { mailFrom, rcptTo, remoteIp, helo },
        }),
      );
    }
  }
  return receipt;
}
