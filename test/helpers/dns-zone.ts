import type { TestDnsServer } from './dns-server.ts';

/** A record Posthorn asks a domain's owner to publish (as GET /v1/domains/{id} lists it). */
export interface RecordToPublish {
  type: string;
  name: string;
  value: string;
  priority?: number;
}

/**
 * Publishes records in the test DNS zone, as a domain's owner would at their DNS provider: a TXT
 * value longer than 255 characters is split into two strings, as DNS requires.
 */
export function publishRecords(dns: TestDnsServer, records: RecordToPublish[]) {
  for (const r of records) {
    const list = dns.zone.get(r.name) ?? [];
    if (r.type === 'TXT')
      list.push({
        type: 'TXT',
        data: r.value.length > 255 ? [r.value.slice(0, 255), r.value.slice(255)] : r.value,
      });
    else list.push({ type: 'MX', exchange: r.value, priority: r.priority ?? 10 });
    dns.zone.set(r.name, list);
  }
}
