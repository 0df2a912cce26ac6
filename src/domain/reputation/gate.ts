import { randomUUID } from 'node:crypto';
import type { authenticate } from 'mailauth';
import { MxResolver } from '../../delivery/direct/mx.ts';
import { reverseDnsProblems } from '../../delivery/direct/source-check.ts';
import { type OutboundRoute, routeView, type SourceAddress } from '../../delivery/routes/view.ts';
import { domainOf, type Mailbox } from '../../mail/address.ts';
import { signDkim } from '../../mail/dkim.ts';
import { bounceAddress, returnPathDomain } from '../../mail/verp.ts';
import type { DomainContext } from '../core/context.ts';
import type { Stream } from '../plans/project-facts.ts';
import { createSigningKeys } from '../sending-domains/dkim-keys.ts';
import { createDnsResolve } from '../sending-domains/dns-lookup.ts';
import { checkOneClickUnsubscribe } from './unsubscribe-check.ts';

/**
 * The bulk-sender gate (issue 33, item 3): what Gmail and Yahoo require of bulk senders since
 * February 2024, checked before a campaign sends or a flow is activated, as a receiver would check
 * it: a message from the sender is signed with the key delivery would use and judged by mailauth
 * against live DNS (POSTHORN_DNS_SERVERS): DKIM passes and aligns with the From domain; SPF passes
 * for the return path (from each source address of a direct route; through a relay, its record
 * includes POSTHORN_SPF_INCLUDE, the relay's addresses being the relay's to publish) and aligns;
 * a DMARC record exists and the message passes it; each source address of a direct route the
 * mail may take has forward-confirmed reverse DNS; and the message's own List-Unsubscribe URL
 * unsubscribes a canary with one RFC 8058 POST (unsubscribe-check.ts). Nothing is checked when
 * POSTHORN_BULK_GATE is off or when all the mail goes to the dev mailbox (it never leaves).
 */

export type GateCheckId = 'dkim' | 'spf' | 'dmarc' | 'reverse_dns' | 'unsubscribe';

export interface GateCheck {
  id: GateCheckId;
  ok: boolean;
  message: string;
}

export interface GateResult {
  /** False when nothing is checked (`skipped` says why). */
  applies: boolean;
  skipped?: string;
  checks: GateCheck[];
  passed: boolean;
}

/** Whose mail the gate judges. */
export interface GateSender {
  projectId: string;
  stream: Extract<Stream, 'marketing' | 'automation'>;
  from: Mailbox;
}

/** Where a receiver's checks are made from when no direct route says (TEST-NET-1: never contacted). */
const NO_ADDRESS = '192.0.2.1';

/** The routes off this server the sender's mail may leave by (every rule it may meet, whoever the recipients). */
function routesOf(ctx: DomainContext, sender: GateSender): OutboundRoute[] {
  return routeView(ctx.config).outboundFor({
    stream: sender.stream,
    projectId: sender.projectId,
    fromDomain: domainOf(sender.from.address),
  });
}

function sampleMessage(from: Mailbox, fromDomain: string): Buffer {
  return Buffer.from(
    [
      `From: ${from.address}`,
      'To: gate-check@example.invalid',
      'Subject: Bulk-sender check',
      `Date: ${new Date().toUTCString()}`,
      `Message-ID: <${randomUUID()}@${fromDomain}>`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'A check of what receivers verify.',
      '',
    ].join('\r\n'),
  );
}

const aligned = (domain: string, fromDomain: string) =>
  domain === fromDomain || domain.endsWith(`.${fromDomain}`) || fromDomain.endsWith(`.${domain}`);

type Resolve = ReturnType<typeof createDnsResolve>;

/** mailauth, loaded when the gate first runs: a worker with the gate off never carries it (~20 MB). */
const mailauth = () => import('mailauth');

async function spfCheck(
  ctx: DomainContext,
  resolver: Resolve,
  sender: string,
  fromDomain: string,
  sources: SourceAddress[],
  throughRelay: boolean,
): Promise<GateCheck> {
  const domain = domainOf(sender);
  if (!aligned(domain, fromDomain))
    return { id: 'spf', ok: false, message: `The return path ${domain} does not align with ${fromDomain}` };
  const problems: string[] = [];
  const { spf } = await mailauth();
  for (const source of sources) {
    const result = await spf({ ip: source.address, sender, helo: source.ehlo, mta: 'gate', resolver });
    if (result.status.result !== 'pass')
      problems.push(
        `SPF of ${domain} is ${result.status.result} for ${source.address} (a source address of a direct route)${result.status.comment ? `: ${result.status.comment}` : ''}; add ip${source.address.includes(':') ? 6 : 4}:${source.address} to its record`,
      );
  }
  if (throughRelay) {
    const include = `include:${ctx.config.spfInclude}`;
    const records = ((await resolver(domain, 'TXT').catch(() => [])) as string[][])
      .map((r) => r.join(''))
      .filter((r) => /^v=spf1(\s|$)/i.test(r));
    if (records.length === 0)
      problems.push(`${domain} has no SPF record: publish \`v=spf1 ${include} ~all\``);
    else if (!records.some((r) => r.toLowerCase().split(/\s+/).includes(include.toLowerCase())))
      problems.push(
        `The SPF record of ${domain} does not include ${ctx.config.spfInclude}: add \`${include}\``,
      );
  }
  if (problems.length > 0) return { id: 'spf', ok: false, message: problems.join('; ') };
  return {
    id: 'spf',
    ok: true,
    message: `SPF passes for the return path ${domain}, aligned with ${fromDomain}${sources.length > 0 ? ` (from ${sources.map((s) => s.address).join(', ')})` : ''}`,
  };
}

type Judged = Awaited<ReturnType<typeof authenticate>>;

function dkimCheck(judged: Judged, key: { domain: string; selector: string }, fromDomain: string): GateCheck {
  const signature = judged.dkim.results[0];
  const result = signature?.status.result ?? 'none';
  const record = `${key.selector}._domainkey.${key.domain}`;
  if (result === 'pass' && signature?.status.aligned)
    return { id: 'dkim', ok: true, message: `DKIM passes with ${record}, aligned with ${fromDomain}` };
  return {
    id: 'dkim',
    ok: false,
    message:
      result === 'pass'
        ? `DKIM passes as d=${key.domain}, which does not align with ${fromDomain}: send from a verified domain`
        : `DKIM is ${result} with ${record}${signature?.status.comment ? ` (${signature.status.comment})` : ''}: publish the DKIM record shown for the domain`,
  };
}

function dmarcCheck(judged: Judged, fromDomain: string): GateCheck {
  const dmarc = judged.dmarc || null;
  if (!dmarc?.p)
    return {
      id: 'dmarc',
      ok: false,
      message: `No DMARC record at _dmarc.${fromDomain}: publish one (start with \`v=DMARC1; p=none\`); Gmail and Yahoo require it of bulk senders`,
    };
  const result = dmarc.status.result;
  return result === 'pass'
    ? { id: 'dmarc', ok: true, message: `DMARC record found (p=${dmarc.p}) and the message passes it` }
    : { id: 'dmarc', ok: false, message: `DMARC is ${result} (p=${dmarc.p}): DKIM or SPF must pass aligned` };
}

async function reverseDnsCheck(
  ctx: DomainContext,
  routes: OutboundRoute[],
  sources: SourceAddress[],
): Promise<GateCheck> {
  const dns = new MxResolver({ servers: ctx.config.dnsServers });
  const problems: string[] = [];
  for (const route of routes)
    if (route.type === 'direct')
      problems.push(...(await reverseDnsProblems(route.name, route.sourceAddresses, dns)));
  return problems.length > 0
    ? { id: 'reverse_dns', ok: false, message: problems.join('; ') }
    : {
        id: 'reverse_dns',
        ok: true,
        message: `Each source address (${sources.map((s) => s.address).join(', ')}) has forward-confirmed reverse DNS`,
      };
}

/** The checks of the gate (see the file's comment), each with its plain reason. */
export async function runGate(ctx: DomainContext, sender: GateSender): Promise<GateResult> {
  const skip = (skipped: string): GateResult => ({ applies: false, skipped, checks: [], passed: true });
  if (ctx.config.bulkGate === 'off') return skip('POSTHORN_BULK_GATE is off');
  const routes = routesOf(ctx, sender);
  if (routes.length === 0)
    return skip('This mail goes to the dev mailbox or the feedback simulator: nothing leaves the server');
  const fromDomain = domainOf(sender.from.address).toLowerCase();
  const key = await createSigningKeys(ctx)(sender.projectId, fromDomain);
  const resolver = createDnsResolve(ctx.config.dnsServers);
  const sources = routes.flatMap((r) => r.sourceAddresses);
  const envelope = bounceAddress(
    ctx.secrets.hash,
    randomUUID(),
    returnPathDomain(key.domain, ctx.config.sharedDomain),
  );
  const { authenticate } = await mailauth();
  const judged = await authenticate(signDkim(sampleMessage(sender.from, fromDomain), key), {
    ip: sources[0]?.address ?? NO_ADDRESS,
    helo: sources[0]?.ehlo ?? 'gate.invalid',
    sender: envelope,
    mta: 'gate',
    resolver,
    disableArc: true,
    disableBimi: true,
  });
  const checks: GateCheck[] = [];

  checks.push(dkimCheck(judged, key, fromDomain));
  checks.push(
    await spfCheck(
      ctx,
      resolver,
      envelope,
      fromDomain,
      sources,
      routes.some((r) => r.type !== 'direct'),
    ),
  );
  checks.push(dmarcCheck(judged, fromDomain));
  if (sources.length > 0) checks.push(await reverseDnsCheck(ctx, routes, sources));

  const unsubscribe = await checkOneClickUnsubscribe(ctx, sender.projectId, sender.stream, sender.from);
  checks.push({ id: 'unsubscribe', ...unsubscribe });
  return { applies: true, checks, passed: checks.every((c) => c.ok) };
}
