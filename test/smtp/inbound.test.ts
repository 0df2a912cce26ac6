import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { deliverToMx } from '../helpers/smtp-clients.ts';

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;
let key: string;
let inboxDomain: string;

const CRLF = '\r\n';
const senderKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });

beforeAll(async () => {
  dns = await startDnsServer();
  const publicKey = senderKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  dns.zone.set('sender.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  // a TXT string holds at most 255 bytes: a 2048-bit key is published in several
  const record = `v=DKIM1; k=rsa; p=${publicKey}`;
  dns.zone.set('sel._domainkey.sender.example', [
    { type: 'TXT', data: record.match(/.{1,255}/g) as string[] },
  ]);
  dns.zone.set('_dmarc.sender.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  dns.zone.set('spoofed.example', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 -all' }]);
  dns.zone.set('_dmarc.spoofed.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
  const me = await server.call('GET', '/v1/me', { key });
  inboxDomain = me.body.inbound.domain;
}, 60_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

function mime(opts: {
  from?: string;
  to: string;
  subject?: string;
  body?: string;
  attachment?: { filename: string; content: Buffer; type: string };
  extraHeaders?: string[];
}): string {
  const boundary = `b-${randomBytes(8).toString('hex')}`;
  const headers = [
    `From: ${opts.from ?? 'Sender <alice@sender.example>'}`,
    `To: ${opts.to}`,
    `Subject: ${opts.subject ?? 'Hello inbound'}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@sender.example>`,
    'Date: Sun, 22 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    ...(opts.extraHeaders ?? []),
  ];
  if (!opts.attachment) {
    return [...headers, 'Content-Type: text/plain; charset=utf-8', '', opts.body ?? 'Hello there', ''].join(
      CRLF,
    );
  }
  const b64 = opts.attachment.content.toString('base64').replace(/.{76}/g, `$&${CRLF}`);
  return [
    ...headers,
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    opts.body ?? 'See the attachment',
    `--${boundary}`,
    `Content-Type: ${opts.attachment.type}; name="${opts.attachment.filename}"`,
    `Content-Disposition: attachment; filename="${opts.attachment.filename}"`,
    'Content-Transfer-Encoding: base64',
    '',
    b64,
    `--${boundary}--`,
    '',
  ].join(CRLF);
}

async function inboundCount(projectId: string) {
  const row = await server.runtime.ctx.db
    .selectFrom('inbound_messages')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function newest() {
  const list = await server.call('GET', '/v1/inbound?limit=1', { key });
  expect(list.status).toBe(200);
  return (await server.call('GET', `/v1/inbound/${list.body.data[0].id}`, { key })).body;
}

describe('receiving at the project inbound address', () => {
  it('GET /me shows where to send', async () => {
    const me = await server.call('GET', '/v1/me', { key });
    expect(me.body.inbound.domain).toMatch(/^[0-9a-f]{12}\.inbound\.posthorn\.localhost$/);
    expect(me.body.inbound.address).toBe(`inbound@${me.body.inbound.domain}`);
  });

  it('stores a DKIM-signed message with its attachment byte-identical and the authentication results', async () => {
    const content = randomBytes(200_000);
    const raw = mime({
      to: `support@${inboxDomain}`,
      attachment: { filename: 'report.pdf', content, type: 'application/pdf' },
    });
    const signed = await dkimSign(raw, {
      signatureData: [
        {
          signingDomain: 'sender.example',
          selector: 'sel',
          privateKey: senderKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
          canonicalization: 'relaxed/relaxed',
        },
      ],
    } as never);
    const res = await deliverToMx(
      server,
      { from: 'alice@sender.example', to: [`support@${inboxDomain}`] },
      signed.signatures + raw,
    );
    expect(res.ok, res.response).toBe(true);
    expect(res.response).toMatch(/^250 2\.0\.0 Accepted: stored as [0-9a-f-]{36}/);
    const id = /stored as ([0-9a-f-]{36})/.exec(res.response)?.[1];

    const got = await server.call('GET', `/v1/inbound/${id}`, { key });
    expect(got.status).toBe(200);
    const msg = got.body;
    expect(msg.object).toBe('inbound_email');
    expect(msg.from_address).toBe('alice@sender.example');
    expect(msg.to).toEqual([`support@${inboxDomain}`]);
    expect(msg.subject).toBe('Hello inbound');
    expect(msg.text.trim()).toBe('See the attachment');
    expect(msg.envelope.rcpt_to).toEqual([`support@${inboxDomain}`]);
    expect(msg.headers.find((h: { name: string }) => h.name.toLowerCase() === 'subject').value).toBe(
      'Hello inbound',
    );
    expect(msg.auth.spf).toBe('pass');
    expect(msg.auth.dkim).toEqual([{ domain: 'sender.example', selector: 'sel', result: 'pass' }]);
    expect(msg.auth.dmarc).toBe('pass');
    expect(msg.auth.authentication_results).toContain('dkim=pass');
    expect(msg.spam.flagged).toBe(false);

    expect(msg.attachments).toHaveLength(1);
    expect(msg.attachments[0]).toMatchObject({
      position: 0,
      filename: 'report.pdf',
      content_type: 'application/pdf',
      size: content.length,
      checksum: createHash('sha256').update(content).digest('hex'),
    });
    const download = await fetch(`${server.url}/v1/inbound/${id}/attachments/0`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(download.headers.get('content-disposition')).toContain('filename="report.pdf"');
    expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);

    const rawRes = await fetch(`${server.url}/v1/inbound/${id}/raw`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(rawRes.headers.get('content-type')).toContain('message/rfc822');
    expect(Buffer.from(await rawRes.arrayBuffer()).equals(Buffer.from(signed.signatures + raw))).toBe(true);

    const list = await server.call('GET', '/v1/inbound', { key });
    expect(list.body).toMatchObject({ limit: 25, offset: 0 });
    expect(list.body.data.some((m: { id: string }) => m.id === id)).toBe(true);
  });

  it('flags a message whose DMARC fails under p=reject', async () => {
    const res = await deliverToMx(
      server,
      { from: 'ceo@spoofed.example', to: [`ceo-inbox@${inboxDomain}`] },
      mime({ from: 'CEO <ceo@spoofed.example>', to: `ceo-inbox@${inboxDomain}`, subject: 'Wire money' }),
    );
    expect(res.ok, res.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('Wire money');
    expect(msg.auth.spf).toBe('fail');
    expect(msg.auth.dmarc).toBe('fail');
    expect(msg.spam.flagged).toBe(true);
    expect(msg.spam.reasons.join(' ')).toContain('DMARC failed');
  });

  it('refuses a recipient of another domain at RCPT with 550 and stores nothing (no open relay)', async () => {
    const before = await inboundCount(account.project.id);
    for (const to of [
      'someone@example.org',
      `x@unknownslug.inbound.posthorn.localhost`,
      'postmaster@posthorn.localhost',
    ]) {
      const res = await deliverToMx(server, { from: 'a@sender.example', to: [to] }, mime({ to }));
      expect(res.ok).toBe(false);
      expect(res.code).toBe(550);
      expect(res.response).toContain('no such mailbox here');
    }
    expect(await inboundCount(account.project.id)).toBe(before);
  });

  it('refuses mail for a project whose plan lacks inbound, and its API answers 402', async () => {
    const free = await server.signupConfirmed();
    const me = await server.call('GET', '/v1/me', { key: free.project_key.key });
    const to = `hi@${me.body.inbound.domain}`;
    const res = await deliverToMx(server, { from: 'a@sender.example', to: [to] }, mime({ to }));
    expect(res.code).toBe(550);
    expect(res.response).toContain('plan does not include inbound');
    const list = await server.call('GET', '/v1/inbound', { key: free.project_key.key });
    expect(list.status).toBe(402);
    expect(list.body).toMatchObject({
      code: 'plan_upgrade_required',
      feature: 'inbound',
      upgrade_to: 'starter',
    });
  });

  it("another project's message is 404", async () => {
    const msg = await newest();
    const other = await server.signupConfirmed();
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    const res = await server.call('GET', `/v1/inbound/${msg.id}`, { key: other.project_key.key });
    expectError(res, 404);
    expectError(await server.call('GET', '/v1/inbound/not-a-uuid', { key }), 404);
    expectError(await server.call('GET', `/v1/inbound/${msg.id}/attachments/7`, { key }), 404);
    expectError(
      await server.call('GET', `/v1/inbound/${msg.id}/attachments/x`, { key }),
      400,
      /Path parameter `position` must be a whole number/,
    );
  });
});

describe('hard cases are stored or refused cleanly', () => {
  it('malformed MIME (a boundary that never closes) is stored', async () => {
    const to = `broken@${inboxDomain}`;
    const raw = [
      'From: alice@sender.example',
      `To: ${to}`,
      'Subject: Broken MIME',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="never-closed"',
      '',
      '--never-closed',
      'Content-Type: text/plain',
      '',
      'Half a message',
      '--never-closed',
      'Content-Type: application/octet-stream',
      'Content-Transfer-Encoding: base64',
      '',
      '!!!not base64!!!',
      '',
    ].join(CRLF);
    const res = await deliverToMx(server, { from: 'alice@sender.example', to: [to] }, raw);
    expect(res.ok, res.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('Broken MIME');
    expect(msg.text).toContain('Half a message');
  });

  it('8-bit (raw UTF-8) headers are stored and decoded', async () => {
    const to = `utf8@${inboxDomain}`;
    const raw = Buffer.from(
      [
        'From: Jörg Müller <joerg@sender.example>',
        `To: ${to}`,
        'Subject: Grüße aus Köln ✓',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 8bit',
        '',
        'Schöne Grüße',
        '',
      ].join(CRLF),
      'utf8',
    );
    const res = await deliverToMx(server, { from: 'joerg@sender.example', to: [to] }, raw);
    expect(res.ok, res.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('Grüße aus Köln ✓');
    expect(msg.from).toContain('Jörg Müller');
    expect(msg.text.trim()).toBe('Schöne Grüße');
    // the raw download is the bytes as received, 8-bit and all, not re-encoded as JSON or text
    const download = await fetch(`${server.url}/v1/inbound/${msg.id}/raw`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toContain('message/rfc822');
    expect(Buffer.from(await download.arrayBuffer()).equals(raw)).toBe(true);
  });

  it('a message with no body at all is stored', async () => {
    const to = `empty@${inboxDomain}`;
    const raw = ['From: alice@sender.example', `To: ${to}`, 'Subject: Nothing inside', '', ''].join(CRLF);
    const res = await deliverToMx(server, { from: 'alice@sender.example', to: [to] }, raw);
    expect(res.ok, res.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('Nothing inside');
    expect(msg.attachments).toEqual([]);
  });

  it('a 30 MB attachment is stored byte-identical', async () => {
    const content = randomBytes(30 * 1024 * 1024);
    const to = `large@${inboxDomain}`;
    const res = await deliverToMx(
      server,
      { from: 'alice@sender.example', to: [to] },
      mime({
        to,
        subject: 'Large',
        attachment: { filename: 'big.bin', content, type: 'application/octet-stream' },
      }),
    );
    expect(res.ok, res.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('Large');
    expect(msg.attachments[0].size).toBe(content.length);
    const download = await fetch(`${server.url}/v1/inbound/${msg.id}/attachments/0`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);
  }, 120_000);

  it('a message over the MX size limit is refused with 552 and nothing is stored', async () => {
    const before = await inboundCount(account.project.id);
    const to = `huge@${inboxDomain}`;
    const res = await deliverToMx(
      server,
      { from: 'alice@sender.example', to: [to] },
      mime({
        to,
        subject: 'Huge',
        attachment: {
          filename: 'huge.bin',
          content: Buffer.alloc(40 * 1024 * 1024, 1),
          type: 'application/octet-stream',
        },
      }),
    );
    expect(res.ok).toBe(false);
    expect(res.code).toBe(552);
    expect(await inboundCount(account.project.id)).toBe(before);
  }, 120_000);
});

describe('receiving at a verified domain of the project', () => {
  it('is refused until inbound is enabled on the domain, then stored', async () => {
    const row = await insertVerifiedDomain(server, account.project.id, 'support.example');
    const to = 'help@support.example';
    const refused = await deliverToMx(server, { from: 'alice@sender.example', to: [to] }, mime({ to }));
    expect(refused.code).toBe(550);

    expectError(
      await server.call('PATCH', `/v1/domains/${row.id}`, { key, body: { inbound_enabled: 'yes' } }),
      400,
      /inbound_enabled/,
    );
    const enabled = await server.call('PATCH', `/v1/domains/${row.id}`, {
      key,
      body: { inbound_enabled: true },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.inbound_enabled).toBe(true);
    expect(enabled.body.records).toContainEqual(
      expect.objectContaining({
        type: 'MX',
        name: 'support.example',
        value: 'mx.posthorn.localhost',
        required: false,
      }),
    );

    const accepted = await deliverToMx(
      server,
      { from: 'alice@sender.example', to: [to] },
      mime({ to, subject: 'To my own domain' }),
    );
    expect(accepted.ok, accepted.response).toBe(true);
    const msg = await newest();
    expect(msg.subject).toBe('To my own domain');
    expect(msg.envelope.rcpt_to).toEqual([to]);

    const disabled = await server.call('PATCH', `/v1/domains/${row.id}`, {
      key,
      body: { inbound_enabled: false },
    });
    expect(disabled.body.inbound_enabled).toBe(false);
    expect((await deliverToMx(server, { from: 'a@sender.example', to: [to] }, mime({ to }))).code).toBe(550);
  });

  it('enabling inbound needs a plan with inbound (402)', async () => {
    const free = await server.signupConfirmed();
    const row = await insertVerifiedDomain(server, free.project.id, 'free.example');
    const res = await server.call('PATCH', `/v1/domains/${row.id}`, {
      key: free.project_key.key,
      body: { inbound_enabled: true },
    });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ feature: 'inbound', upgrade_to: 'starter' });
  });
});
