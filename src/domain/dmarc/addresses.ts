import { timingSafeEqual } from 'node:crypto';
import type { DomainContext } from '../core/context.ts';

/**
 * Each sending domain's report addresses on Posthorn's inbound domain (issue 34):
 * `dmarc+<id><check>@<inbound domain>` for DMARC aggregate reports (its DMARC record's `rua`) and
 * `tlsrpt+<id><check>@...` for SMTP TLS reports (its `_smtp._tls` record's `rua`): the domain's id
 * as 32 hex digits and a 10-digit keyed checksum, so an address names its domain and cannot be
 * made up for another.
 */

export type ReportKind = 'dmarc' | 'tlsrpt';

type Hash = (value: string) => Buffer;

const check = (hash: Hash, kind: ReportKind, compact: string) =>
  hash(`report-address:${kind}:${compact}`).subarray(0, 5).toString('hex');

/** The address a domain's reports of `kind` go to. */
export function reportAddress(
  ctx: Pick<DomainContext, 'config' | 'secrets'>,
  kind: ReportKind,
  domainId: string,
) {
  const compact = domainId.replace(/-/g, '').toLowerCase();
  return `${kind}+${compact}${check(ctx.secrets.hash, kind, compact)}@${ctx.config.inboundDomain}`;
}

/** The domain id and kind a report address names, or null when it is not one of ours. */
export function readReportAddress(
  ctx: Pick<DomainContext, 'config' | 'secrets'>,
  address: string,
): { kind: ReportKind; domainId: string } | null {
  const match = /^(dmarc|tlsrpt)\+([0-9a-f]{32})([0-9a-f]{10})@(.+)$/.exec(address.toLowerCase());
  if (!match || match[4] !== ctx.config.inboundDomain) return null;
  const kind = match[1] as ReportKind;
  const expected = Buffer.from(check(ctx.secrets.hash, kind, match[2]));
  if (!timingSafeEqual(expected, Buffer.from(match[3]))) return null;
  const h = match[2];
  return {
    kind,
    domainId: `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`,
  };
}

/**
 * The record a domain's DMARC `rua` on another domain needs (RFC 7489 §7.1): the inbound domain
 * says it takes reports for every domain with one wildcard TXT record the operator publishes.
 */
export function reportAuthorisationRecord(ctx: Pick<DomainContext, 'config'>) {
  return { type: 'TXT' as const, name: `*._report._dmarc.${ctx.config.inboundDomain}`, value: 'v=DMARC1' };
}
