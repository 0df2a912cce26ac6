import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { sharedDkimResolver, swaks } from '../helpers/smtp-clients.ts';

// Interop suite (`npm run test:interop`): needs Debian's swaks with its TLS modules
// (apt-get install swaks libio-socket-ssl-perl libnet-ssleay-perl).

let server: TestServer;
let dns: TestDnsServer;
let account: SignupResult;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer(
    { POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0', POSTHORN_DNS_SERVERS: dns.address },
    ['api', 'worker', 'smtp'],
  );
  account = await server.signupConfirmed();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('SMTP submission with swaks (Debian) as the client', () => {
  const serverArgs = () => ['--server', `127.0.0.1:${server.runtime.smtp?.submissionPort}`];
  const base = () => [...serverArgs(), '--tls', '--from', 'onboarding@posthorn.localhost'];

  it('sees SIZE and AUTH PLAIN LOGIN in EHLO after STARTTLS, and no AUTH before it', async () => {
    const transcript = await swaks([...serverArgs(), '--tls', '--quit-after', 'EHLO']);
    expect(transcript.code, transcript.output).toBe(0);
    // swaks prints the EHLO reply twice: before STARTTLS (plain `<-`) and after it (`<~`)
    expect(transcript.output).toMatch(/<- {2}250[- ]STARTTLS/);
    expect(transcript.output).not.toMatch(/<- {2}250[- ]AUTH/);
    expect(transcript.output).toMatch(/<~ {2}250[- ]SIZE 41943040/);
    expect(transcript.output).toMatch(/<~ {2}250[- ]AUTH PLAIN LOGIN/);
  });

  it('AUTH PLAIN with a project key delivers a signed message with both headers and the Received header', async () => {
    const result = await swaks([
      ...base(),
      '--to',
      'swaks-plain@example.org',
      '--auth',
      'PLAIN',
      '--auth-user',
      'posthorn',
      '--auth-password',
      account.project_key.key,
      '--header',
      'Subject: From swaks',
      '--body',
      'Sent by swaks',
    ]);
    expect(result.code, result.output).toBe(0);
    const id = /queued as ([0-9a-f-]{36})/.exec(result.output)?.[1] as string;
    const email = await waitForStatus(server, account.project_key.key, id, 'sent');
    const message = await server.sink.waitFor((m) => m.parsed.messageId === email.message_id);
    expect(message.parsed.subject).toBe('From swaks');
    expect(message.parsed.headers.get('x-posthorn-project')).toBe(account.project.id);
    expect(message.parsed.headers.get('x-posthorn-stream')).toBe('transactional');
    expect(String(message.parsed.headers.get('received'))).toMatch(
      new RegExp(`^by smtp\\.posthorn\\.localhost \\(Posthorn\\) with ESMTPSA id ${id};`),
    );
    const verified = await dkimVerify(message.raw, { resolver: await sharedDkimResolver(server) });
    expect(verified.results[0].status.result).toBe('pass');
  });

  it('AUTH LOGIN with an all-access key and the project id as username', async () => {
    const result = await swaks([
      ...base(),
      '--to',
      'swaks-login@example.org',
      '--auth',
      'LOGIN',
      '--auth-user',
      account.project.id,
      '--auth-password',
      account.account_key.key,
    ]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/250 2\.0\.0 Accepted: queued as/);
  });

  it('a bad key fails AUTH with 535, and without TLS swaks finds no AUTH and never sends the key', async () => {
    const bad = await swaks([
      ...base(),
      '--to',
      'x@example.org',
      '--auth',
      'PLAIN',
      '--auth-user',
      'posthorn',
      '--auth-password',
      'ph_wrong',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.output).toMatch(/535/);
    const plain = await swaks([
      ...serverArgs(),
      '--from',
      'onboarding@posthorn.localhost',
      '--to',
      'x@example.org',
      '--auth',
      'PLAIN',
      '--auth-user',
      'posthorn',
      '--auth-password',
      account.project_key.key,
    ]);
    expect(plain.code).not.toBe(0);
    expect(plain.output).toMatch(/did not advertise authentication/i);
    expect(plain.output).not.toMatch(/~> AUTH|-> AUTH/);
    expect(plain.output).not.toMatch(/Accepted: queued/);
  });
});
