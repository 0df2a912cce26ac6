import { describe, expect, it } from 'vitest';
import { relayFailure } from '../../src/delivery/smtp-relay.ts';

const smtpError = (command: string | undefined, responseCode: number | undefined, code = 'EENVELOPE') =>
  Object.assign(new Error('failed'), { command, responseCode, code, response: `${responseCode} text` });

describe('relayFailure: what a relay refusal means for the message', () => {
  it('a 5xx to RCPT TO or to the message bounces it and blames its recipients', () => {
    for (const command of ['RCPT TO', 'DATA']) {
      const e = relayFailure(smtpError(command, 550));
      expect([e.permanent, e.recipientsAtFault, e.response]).toEqual([true, true, '550 text']);
    }
  });

  it('a 5xx to MAIL FROM fails the message without blaming its recipients', () => {
    const e = relayFailure(smtpError('MAIL FROM', 553));
    expect([e.permanent, e.recipientsAtFault]).toEqual([true, false]);
  });

  it('a refusal of Posthorn itself (AUTH, greeting) is temporary and names the setting to check', () => {
    for (const [command, code] of [
      ['AUTH PLAIN', 535],
      ['CONN', 554],
      ['EHLO', 550],
    ] as const) {
      const e = relayFailure(smtpError(command, code, 'EAUTH'));
      expect(e.permanent).toBe(false);
      expect(e.response).toMatch(new RegExp(`at ${command}: ${code} text \\(check POSTHORN_SMTP_RELAY\\)`));
    }
  });

  it('a 4xx or a lost connection is temporary and keeps the reply as it was', () => {
    expect(relayFailure(smtpError('RCPT TO', 452))).toMatchObject({ permanent: false, response: '452 text' });
    const lost = relayFailure(Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' }));
    expect(lost).toMatchObject({ permanent: false, response: 'Connection closed' });
  });
});
