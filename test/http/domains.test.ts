import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsLookup } from '../../src/domain/sending-domains/dns-lookup.ts';
import { recheckDomains } from '../../src/domain/sending-domains/domains.ts';
import { expectError } from '../helpers/assertions.ts';
import { authenticateAtReceiver, startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { publishRecords } from '../helpers/dns-zone.ts';
import { waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let dns: TestDnsServer;
let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ POSTHORN_DNS_SERVERS: dns.address });
  account = await server.signupConfirmed();
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

type Rec = {
  type: string;
  name: string;
  value: string;
  priority?: number;
  status: string;
  found?: string[];
  required: boolean;
};

const publish = (records: Rec[]) => publishRecords(dns, records);

describe('adding a domain', () => {
  it('returns the DNS records to publish, each pending', async () => {
    const res = await server.call('POST', '/v1/domains', { key, body: { domain: 'Mail.Example.COM.' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'domain', name: 'mail.example.com', status: 'pending' });
    const types = res.body.records.map((r: Rec) => `${r.type} ${r.name} ${r.required}`);
    expect(types).toEqual([
      expect.stringMatching(/^TXT ph[a-z0-9]+\._domainkey\.mail\.example\.com true$/),
      'TXT bounces.mail.example.com true',
      'MX bounces.mail.example.com true',
      'TXT _dmarc.mail.example.com false',
      // TLS reporting to the domain's report address (issue 34)
      'TXT _smtp._tls.mail.example.com false',
    ]);
    expect(res.body.records[0].value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    for (const r of res.body.records) expect(r.status).toBe('pending');
    expectError(
      await server.call('POST', '/v1/domains', { key, body: { domain: 'mail.example.com' } }),
      409,
      /already/,
    );
    const stored = await server.runtime.ctx.db
      .selectFrom('dkim_keys')
      .select('private_key')
      .where('domain', '=', 'mail.example.com')
      .executeTakeFirstOrThrow();
    expect(stored.private_key.toString('latin1')).not.toContain('PRIVATE KEY');
  });

  it.each([
    [{}, /required/],
    [{ domain: 42 }, /string/],
    [{ domain: '192.168.1.1' }, /IP address/],
    [{ domain: `${'a'.repeat(290)}.com` }, /253/],
    [{ domain: 'localhost' }, /valid domain|local/],
    [{ domain: 'exa mple.com' }, /spaces/],
    [{ domain: 'https://example.com' }, /scheme/],
    [{ domain: 'news.posthorn.localhost' }, /shared domain|local/],
  ])('refuses %j with 400', async (body, message) => {
    expectError(await server.call('POST', '/v1/domains', { key, body }), 400, message);
  });

  it("is 403 for a project key on the account API and 404 for another project's domain", async () => {
    expectError(
      await server.call('POST', `/v1/projects/${account.project.id}/domains`, {
        key,
        body: { domain: 'x.example.net' },
      }),
      403,
      /all-access/,
    );
    const mine = await server.call('POST', `/v1/projects/${account.project.id}/domains`, {
      key: account.account_key.key,
      body: { domain: 'acct.example.net' },
    });
    expect(mine.status).toBe(200);
    const other = await server.signup();
    expectError(await server.call('GET', `/v1/domains/${mine.body.id}`, { key: other.project_key.key }), 404);
    expectError(
      await server.call('POST', `/v1/domains/${mine.body.id}/check`, { key: other.project_key.key }),
      404,
    );
  });
});

describe('checking a domain against a real DNS server', () => {
  it('goes pending → verified once published, reports mismatch and missing, survives SERVFAIL, then fails when records go', async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'verify.example.org' } });
    const id = added.body.id;
    const records: Rec[] = added.body.records;

    const nothing = await server.call('POST', `/v1/domains/${id}/check`, { key });
    expect(nothing.status).toBe(200);
    expect(nothing.body.status).toBe('pending');
    expect(nothing.body.records.map((r: Rec) => r.status)).toEqual([
      'missing',
      'missing',
      'missing',
      'missing',
      'missing',
    ]);

    // a wrong DKIM value is a mismatch that shows what was found
    const dkim = records[0];
    dns.zone.set(dkim.name, [{ type: 'TXT', data: 'v=DKIM1; k=rsa; p=AAAAwrong' }]);
    const wrong = await server.call('POST', `/v1/domains/${id}/check`, { key });
    expect(wrong.body.records[0]).toMatchObject({
      status: 'mismatch',
      found: ['v=DKIM1; k=rsa; p=AAAAwrong'],
    });
    dns.zone.delete(dkim.name);

    publish(records);
    const verified = await server.call('POST', `/v1/domains/${id}/check`, { key });
    expect(verified.body.status).toBe('verified');
    expect(verified.body.records.map((r: Rec) => r.status)).toEqual([
      'verified',
      'verified',
      'verified',
      'verified',
      'verified',
    ]);
    const me = await server.call('GET', '/v1/me', { key });
    expect(me.body.sending.verified_domains).toContain('verify.example.org');

    // SERVFAIL: a clear error, nothing changed
    dns.failing.add(dkim.name);
    const broken = await server.call('POST', `/v1/domains/${id}/check`, { key });
    expectError(broken, 503, /SERVFAIL|ESERVFAIL|failed/);
    expect((await server.call('GET', `/v1/domains/${id}`, { key })).body.status).toBe('verified');
    dns.failing.delete(dkim.name);

    // two SPF records are a mismatch
    dns.zone.set(records[1].name, [
      { type: 'TXT', data: records[1].value },
      { type: 'TXT', data: 'v=spf1 -all' },
      ...(dns.zone.get(records[1].name) ?? []).filter((r) => r.type === 'MX'),
    ]);
    const doubled = await server.call('POST', `/v1/domains/${id}/check`, { key });
    expect(doubled.body.records[1].status).toBe('mismatch');
    expect(doubled.body.records[1].found.join(' ')).toMatch(/2 v=spf1 records/);
    expect(doubled.body.status).toBe('failed');

    // the records come back, then disappear: the periodic re-check (the cron job's function) notices
    dns.zone.delete(records[1].name);
    dns.zone.delete(records[2].name);
    publish(records.slice(1, 3));
    expect((await server.call('POST', `/v1/domains/${id}/check`, { key })).body.status).toBe('verified');
    for (const r of records) dns.zone.delete(r.name);
    const tomorrow = new Date(Date.now() + 25 * 3_600_000);
    const run = await recheckDomains(server.runtime.ctx, createDnsLookup([dns.address]), tomorrow);
    expect(run.checked).toBeGreaterThan(0);
    const gone = await server.call('GET', `/v1/domains/${id}`, { key });
    expect(gone.body.status).toBe('failed');
    const events = await server.runtime.ctx.db
      .selectFrom('domain_events')
      .select('type')
      .where('domain_id', '=', id)
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.type)).toEqual([
      'domain.verified',
      'domain.failed',
      'domain.verified',
      'domain.failed',
    ]);
  });
});

describe('what DNS answers instead', () => {
  it('reports a CNAME in the way, and deleting a domain removes it and its key', async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'cname.example.org' } });
    const dmarc: Rec = added.body.records[3];
    dns.zone.set(dmarc.name, [{ type: 'CNAME', domain: 'elsewhere.example.net' }]);
    const checked = await server.call('POST', `/v1/domains/${added.body.id}/check`, { key });
    expect(checked.body.records[3]).toMatchObject({
      status: 'missing',
      found: ['CNAME elsewhere.example.net'],
    });

    expect((await server.call('DELETE', `/v1/domains/${added.body.id}`, { key })).status).toBe(204);
    expectError(await server.call('GET', `/v1/domains/${added.body.id}`, { key }), 404);
    const keys = await server.runtime.ctx.db
      .selectFrom('dkim_keys')
      .select('id')
      .where('domain', '=', 'cname.example.org')
      .execute();
    expect(keys).toHaveLength(0);
    const listed = await server.call('GET', '/v1/domains', { key });
    expect(listed.body.data.map((d: { name: string }) => d.name)).not.toContain('cname.example.org');
  });
});

describe('sending from a verified domain', () => {
  it("signs with the domain's own key (d= the domain) and uses its return-path subdomain", async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'send.example.org' } });
    publish(added.body.records);
    expect((await server.call('POST', `/v1/domains/${added.body.id}/check`, { key })).body.status).toBe(
      'verified',
    );

    const res = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: 'News <news@send.example.org>',
        to: 'reader@example.net',
        subject: 'Aligned',
        text: 'hello',
      },
    });
    expect(res.status).toBe(200);
    const email = await waitForStatus(server, key, res.body.id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.from).toMatch(/@bounces\.send\.example\.org$/);
    const dkimRecord = added.body.records[0];
    const verified = await dkimVerify(message.raw, {
      resolver: async (name: string, type: string) => {
        if (type === 'TXT' && name === dkimRecord.name) return [[dkimRecord.value]];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    expect(verified.results[0].status.result).toBe('pass');
    expect(verified.results[0].signingDomain).toBe('send.example.org');

    // the whole check a receiver makes, with every lookup going to the test DNS server:
    // the service's SPF host allows 127.0.0.1, where the sink saw the message come from
    dns.zone.set('_spf.posthorn.localhost', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    const auth = await authenticateAtReceiver(dns, message);
    expect(auth.dkim.results[0].status.result).toBe('pass');
    const spf = auth.spf as { status: { result: string }; domain: string };
    const dmarc = auth.dmarc as { status: { result: string } };
    expect(spf.status.result).toBe('pass');
    expect(spf.domain).toBe('bounces.send.example.org');
    expect(dmarc.status.result).toBe('pass');
  });
});

describe('DKIM key rotation', () => {
  it('publishes a new selector, keeps signing with the old key until the new record is found, then switches', async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'rotate.example.org' } });
    publish(added.body.records);
    await server.call('POST', `/v1/domains/${added.body.id}/check`, { key });
    const oldSelector = added.body.records[0].name.split('.')[0];

    const rotating = await server.call('POST', `/v1/domains/${added.body.id}/dkim/rotate`, { key });
    expect(rotating.status).toBe(200);
    // the key records, the return path's SPF and MX, DMARC, TLS reporting, then the new key
    expect(rotating.body.records).toHaveLength(6);
    const next: Rec = rotating.body.records[5];
    expect(next).toMatchObject({ type: 'TXT', status: 'pending', required: false });
    const newSelector = next.name.split('.')[0];
    expect(newSelector).not.toBe(oldSelector);

    const sendAndSelector = async (subject: string) => {
      const res = await server.call('POST', '/v1/emails', {
        key,
        body: { from: 'rot@rotate.example.org', to: 'r@example.net', subject, text: 'x' },
      });
      const email = await waitForStatus(server, key, res.body.id, 'sent');
      const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
      const signature = /^DKIM-Signature:.*$/im.exec(message.raw.toString('latin1'))?.[0] ?? '';
      return /\bs=([^;\s]+)/.exec(signature)?.[1];
    };
    expect(await sendAndSelector('before publishing')).toBe(oldSelector);

    publish([next]);
    const switched = await server.call('POST', `/v1/domains/${added.body.id}/check`, { key });
    expect(switched.body.status).toBe('verified');
    expect(switched.body.records[0].name).toBe(next.name);
    expect(switched.body.records).toHaveLength(5);
    expect(await sendAndSelector('after publishing')).toBe(newSelector);
  });
});
