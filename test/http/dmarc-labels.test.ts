import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The labels a person gives a domain's DMARC sources (issue 47, item 1): an address PostgreSQL's
 * `inet` would refuse (an IPv6 zone id) is a 400 naming the rule, not a 500, and writes nothing.
 */

let server: TestServer;
let key: string;
let domainId: string;

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  domainId = (await insertVerifiedDomain(server, account.project.id, 'labels.example')).id;
}, 60_000);
afterAll(() => server?.close());

const label = (source: string) =>
  server.call('PUT', `/v1/domains/${domainId}/dmarc/labels`, { key, body: { source, label: 'ours' } });

describe('a source label', () => {
  it.each([
    'fe80::1%eth0',
    'fe80::1%25eth0',
    'fe80::%1/64',
    '::1%lo',
  ])('refuses %s (a zone id) with 400, writing nothing', async (source) => {
    expectError(await label(source), 400, /source must be an IP address or a network/);
    const labels = (await server.call('GET', `/v1/domains/${domainId}/dmarc`, { key })).body.labels;
    expect(labels).toEqual([]);
  });

  it('still takes a link-local address without a zone, and an IPv4-mapped one', async () => {
    const linkLocal = await label('fe80::1');
    expect(linkLocal.status, JSON.stringify(linkLocal.body)).toBe(200);
    expect(linkLocal.body.source).toBe('fe80::1');
    const mapped = await label('::ffff:203.0.113.7');
    expect(mapped.status, JSON.stringify(mapped.body)).toBe(200);
  });
});
