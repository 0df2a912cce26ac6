import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSmtpRelayTransport } from '../../src/delivery/smtp-relay.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';

// A relay that asks for AUTH and, when told to, refuses every sender: what it says about Posthorn
// (a wrong password) or about the sender must never bounce the recipients or suppress them.
let relay: SMTPServer;
let relayPort: number;
const received: string[] = [];
let refuseSenders = false;

beforeAll(async () => {
  relay = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    closeTimeout: 1000,
    onAuth(auth, _session, callback) {
      if (auth.password !== 'right') return callback(new Error('5.7.8 Authentication credentials invalid'));
      callback(null, { user: auth.username });
    },
    onMailFrom(_address, _session, callback) {
      if (refuseSenders)
        return callback(Object.assign(new Error('5.7.1 Sender not allowed to relay'), { responseCode: 553 }));
      callback();
    },
    onData(stream, session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        received.push(...session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
  });
  relay.on('error', () => {});
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  relayPort = (relay.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => relay.close(() => resolve())));

async function serverWithRelay(password: string): Promise<{ server: TestServer; key: string }> {
  const server = await startTestServer({
    POSTHORN_SMTP_RELAY: `smtp://posthorn:${password}@127.0.0.1:${relayPort}`,
    POSTHORN_RETRY_SCHEDULE: '3600',
  });
  // confirmed in the database: the confirmation code would have to pass this relay
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  return { server, key: account.project_key.key };
}

describe('what the relay refuses that is not the recipients', () => {
  it('a wrong relay password defers the message, names the setting, and suppresses nobody', async () => {
    const { server, key } = await serverWithRelay('wrong');
    try {
      const res = await server.call('POST', '/v1/emails', {
        key,
        body: { from: FROM, to: 'reader@example.org', subject: 'Hello', html: '<p>Hi</p>' },
      });
      expect(res.status).toBe(200);
      const email = await waitForStatus(server, key, res.body.id, 'deferred');
      const deferred = email.events.find((e: { type: string }) => e.type === 'deferred');
      expect(deferred.detail.response).toMatch(/535.*check POSTHORN_SMTP_RELAY/);
      expect(email.events.some((e: { type: string }) => e.type === 'bounced')).toBe(false);
      const suppressions = await server.call('GET', '/v1/suppressions', { key });
      expect(suppressions.body.data).toEqual([]);
      expect(received).not.toContain('reader@example.org');
    } finally {
      await server.close();
    }
  });

  it('a sender the relay refuses for good fails the message without bouncing or suppressing its recipients', async () => {
    const { server, key } = await serverWithRelay('right');
    refuseSenders = true;
    try {
      const res = await server.call('POST', '/v1/emails', {
        key,
        body: { from: FROM, to: 'reader2@example.org', subject: 'Hello', html: '<p>Hi</p>' },
      });
      const email = await waitForStatus(server, key, res.body.id, 'failed');
      const failed = email.events.find((e: { type: string }) => e.type === 'failed');
      expect(failed.detail.response).toMatch(/553/);
      expect(email.events.some((e: { type: string }) => e.type === 'bounced')).toBe(false);
      const suppressions = await server.call('GET', '/v1/suppressions', { key });
      expect(suppressions.body.data).toEqual([]);
      expect(received).not.toContain('reader2@example.org');
    } finally {
      refuseSenders = false;
      await server.close();
    }
  });

  it('the worker log says why, once a minute however many messages are deferred', async () => {
    const warnings: string[] = [];
    const transport = createSmtpRelayTransport(`smtp://posthorn:wrong@127.0.0.1:${relayPort}`, {
      warn: (line) => warnings.push(line),
    });
    try {
      for (const n of [1, 2, 3]) {
        const failed = await transport
          .send({
            from: 'a@example.com',
            to: [`r${n}@example.org`],
            raw: Buffer.from('Subject: x\r\n\r\nx\r\n'),
            messageId: `<${n}@x>`,
            attempt: 1,
            tags: { email: `e${n}`, project: null, stream: 'transactional' },
          })
          .catch((e) => e);
        expect(failed.permanent).toBe(false);
      }
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /^messages are deferred: the relay refused Posthorn at AUTH .*535.*check POSTHORN_SMTP_RELAY/,
      );
    } finally {
      await transport.close();
    }
  });
});
