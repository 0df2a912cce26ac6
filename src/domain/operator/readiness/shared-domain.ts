import { routesToCheck } from '../../../delivery/routes/readiness-targets.ts';
import type { DomainContext } from '../../core/context.ts';
import { sharedDomainKey } from '../../sending-domains/dkim-keys.ts';
import { createDnsLookup, createDnsResolve, type DnsLookup } from '../../sending-domains/dns-lookup.ts';
import { sharedDomainRecords } from '../../sending-domains/dns-records.ts';
import { addressOf } from './net.ts';
import { type Check, fail, isLocalName, pass, reason, skip } from './types.ts';

/**
 * The shared domain (POSTHORN_SHARED_DOMAIN), which every project without a verified domain of its
 * own sends from: its names must be real (not the development default under .localhost) and its
 * records published as `posthorn admin shared-domain` prints them, found through the server's
 * resolvers as receivers would find them.
 */

const PRINT = 'Run posthorn admin shared-domain to print the records with their values.';

function namesCheck(ctx: DomainContext): Check {
  const c = ctx.config;
  const names: [string, string][] = [
    ['POSTHORN_SHARED_DOMAIN', c.sharedDomain],
    ['POSTHORN_SMTP_HOST', c.smtpHost],
    ['POSTHORN_INBOUND_HOST', c.inboundHost],
    ['POSTHORN_SPF_INCLUDE', c.spfInclude],
    ['POSTHORN_INBOUND_DOMAIN', c.inboundDomain],
  ];
  const local = names.filter(([, name]) => isLocalName(name));
  const title = 'Shared domain names set';
  if (local.length === 0)
    return pass(
      'shared_domain_names',
      title,
      `The shared domain is ${c.sharedDomain}; SMTP host ${c.smtpHost}, MX host ${c.inboundHost}`,
    );
  return fail(
    'shared_domain_names',
    title,
    `These names end in .localhost, which no one outside this machine can look up, so the records shown for every domain are placeholders: ${local.map(([setting, name]) => `${name} (${setting})`).join(', ')}`,
    'Set POSTHORN_SHARED_DOMAIN to a domain you own (for example mail.example.com: the SMTP host, MX host and SPF name follow it as smtp., mx. and _spf.), restart Posthorn, then publish its records.',
  );
}

type Found = { ok: true; detail: string } | { ok: false; detail: string };

async function spf(dns: DnsLookup, domain: string, include: string): Promise<Found> {
  const own = (await dns.txt(domain)).map((r) => r.joined).filter((v) => /^v=spf1(\s|$)/i.test(v));
  if (own.length === 0) return { ok: false, detail: `${domain} has no SPF record` };
  if (!own.some((v) => v.toLowerCase().split(/\s+/).includes(`include:${include}`)))
    return { ok: false, detail: `The SPF record of ${domain} (${own[0]}) does not include ${include}` };
  const ips = (await dns.txt(include)).map((r) => r.joined).filter((v) => /^v=spf1(\s|$)/i.test(v));
  if (ips.length === 0)
    return { ok: false, detail: `${include} has no SPF record listing the sending addresses` };
  if (ips.some((v) => v.includes('<')))
    return { ok: false, detail: `The SPF record of ${include} still holds a placeholder` };
  return { ok: true, detail: `${domain} includes ${include} (${ips[0]})` };
}

/**
 * SPF as a receiver judges it for mail from each source address of a direct route (mailauth, as the
 * bulk-sender gate does): the shared domain's return path must pass for each.
 */
async function spfOfSources(ctx: DomainContext): Promise<Found | null> {
  const sources = routesToCheck(ctx.config).flatMap((r) => r.sourceAddresses);
  if (sources.length === 0) return null;
  const { spf: judge } = await import('mailauth');
  const resolver = createDnsResolve(ctx.config.dnsServers);
  const sender = `postmaster@${ctx.config.sharedDomain}`;
  for (const source of sources) {
    const result = await judge({ ip: source.address, sender, helo: source.ehlo, mta: 'readiness', resolver });
    if (result.status.result !== 'pass')
      return {
        ok: false,
        detail: `SPF of ${ctx.config.sharedDomain} is ${result.status.result} for ${source.address}, a source address of a direct route: add ip${source.address.includes(':') ? 6 : 4}:${source.address} to the record of ${ctx.config.spfInclude}`,
      };
  }
  return null;
}

async function mx(ctx: DomainContext, dns: DnsLookup): Promise<Found> {
  const { sharedDomain, inboundHost, dnsServers } = ctx.config;
  const hosts = (await dns.mx(sharedDomain)).map((r) => r.exchange.toLowerCase().replace(/\.$/, ''));
  if (!hosts.includes(inboundHost))
    return {
      ok: false,
      detail: hosts.length
        ? `The MX of ${sharedDomain} is ${hosts.join(', ')}, not ${inboundHost}`
        : `${sharedDomain} has no MX record`,
    };
  try {
    const { address } = await addressOf(inboundHost, dnsServers);
    return { ok: true, detail: `${sharedDomain} MX ${inboundHost} (${address})` };
  } catch (err) {
    return { ok: false, detail: `The MX host ${inboundHost} has no address: ${reason(err)}` };
  }
}

/** Each record of the shared domain, looked up: DKIM, SPF, DMARC, MX. */
async function recordChecks(ctx: DomainContext): Promise<Check[]> {
  const c = ctx.config;
  const dns = createDnsLookup(c.dnsServers);
  const key = await sharedDomainKey(ctx);
  const dkimRecord = sharedDomainRecords(c, key)[0];
  const lookups: [string, string, string, () => Promise<Found>][] = [
    [
      'shared_domain_dkim',
      'DKIM record of the shared domain',
      `Publish the TXT record ${dkimRecord.name} with the DKIM key. ${PRINT}`,
      async () => {
        const found = (await dns.txt(dkimRecord.name)).map((r) => r.joined.replace(/\s+/g, ''));
        if (found.includes(dkimRecord.value.replace(/\s+/g, '')))
          return { ok: true, detail: `${dkimRecord.name} holds the signing key` };
        return {
          ok: false,
          detail: found.length
            ? `${dkimRecord.name} holds another key than the one Posthorn signs with`
            : `${dkimRecord.name} has no TXT record`,
        };
      },
    ],
    [
      'shared_domain_spf',
      'SPF records of the shared domain',
      `Publish TXT ${c.sharedDomain} "v=spf1 include:${c.spfInclude} ~all", and TXT ${c.spfInclude} listing your sending addresses (v=spf1 ip4:... -all). ${PRINT}`,
      async () => {
        const found = await spf(dns, c.sharedDomain, c.spfInclude);
        return found.ok ? ((await spfOfSources(ctx)) ?? found) : found;
      },
    ],
    [
      'shared_domain_dmarc',
      'DMARC record of the shared domain',
      `Publish TXT _dmarc.${c.sharedDomain} "v=DMARC1; p=none; rua=mailto:..." with a mailbox you read. Gmail and Yahoo require it of bulk senders.`,
      async () => {
        const found = (await dns.txt(`_dmarc.${c.sharedDomain}`))
          .map((r) => r.joined)
          .filter((v) => /^v=DMARC1/i.test(v));
        return found.length
          ? { ok: true, detail: found[0] }
          : { ok: false, detail: `_dmarc.${c.sharedDomain} has no DMARC record` };
      },
    ],
    [
      'shared_domain_mx',
      'MX record of the shared domain',
      `Publish MX ${c.sharedDomain} 10 ${c.inboundHost} and an A record for ${c.inboundHost} with this server's public address, so bounces and complaints come back.`,
      () => mx(ctx, dns),
    ],
  ];
  const checks: Check[] = [];
  for (const [id, title, fix, look] of lookups) {
    if (isLocalName(c.sharedDomain)) {
      checks.push(
        skip(
          id,
          title,
          `${c.sharedDomain} is a local name: nothing can be published for it`,
          'Set the shared domain names first.',
        ),
      );
      continue;
    }
    try {
      const found = await look();
      checks.push(found.ok ? pass(id, title, found.detail) : fail(id, title, found.detail, fix));
    } catch (err) {
      checks.push(
        fail(
          id,
          title,
          `The lookup failed: ${reason(err)}`,
          `Check that the DNS servers Posthorn asks answer (POSTHORN_DNS_SERVERS), then ${fix.charAt(0).toLowerCase()}${fix.slice(1)}`,
        ),
      );
    }
  }
  return checks;
}

export async function sharedDomainChecks(ctx: DomainContext): Promise<Check[]> {
  return [namesCheck(ctx), ...(await recordChecks(ctx))];
}
