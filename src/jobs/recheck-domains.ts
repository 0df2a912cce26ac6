import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { DomainContext } from '../domain/core/context.ts';
import { createDnsLookup } from '../domain/sending-domains/dns-lookup.ts';
import { recheckDomains } from '../domain/sending-domains/domains.ts';

/** Hourly (crontab) DNS re-check of sending domains, through POSTHORN_DNS_SERVERS when set. */
export function recheckDomainsTask(ctx: DomainContext, log: Logger): Task<'recheck_domains'> {
  return async () => {
    const result = await recheckDomains(ctx, createDnsLookup(ctx.config.dnsServers));
    log.info(result, 'domains re-checked');
  };
}
