import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { submissionAddress } from '../../src/domain/emails/submission-address.ts';

/**
 * Where the SMTP screen tells a client to connect (issue 48, build item 3): on a server tried
 * locally (its SMTP name a localhost one, which may not resolve) the address it listens on, and
 * its self-signed certificate's file; in production the configured name, and no file named.
 */

const ports = { port: 2587, tls_port: null };
const local = {
  smtpHost: 'smtp.posthorn.localhost',
  host: '127.0.0.1',
  dataDir: '/srv/ph',
  tlsCertFile: undefined,
};

describe('submissionAddress', () => {
  it('gives a local server the address it listens on and the self-signed certificate file', () => {
    expect(submissionAddress(local, ports)).toEqual({
      host: '127.0.0.1',
      port: 2587,
      tls_port: null,
      certificate: { self_signed: true, path: path.join('/srv/ph', 'tls', 'self-signed.crt') },
    });
  });

  it('reaches a server listening on every address through 127.0.0.1, and keeps a named one', () => {
    expect(submissionAddress({ ...local, host: '0.0.0.0' }, ports).host).toBe('127.0.0.1');
    expect(submissionAddress({ ...local, host: '::' }, ports).host).toBe('127.0.0.1');
    expect(submissionAddress({ ...local, host: '::1' }, ports).host).toBe('::1');
    expect(submissionAddress({ ...local, smtpHost: 'localhost', host: 'localhost' }, ports).host).toBe(
      'localhost',
    );
  });

  it('keeps the configured name in production and names no file of the server', () => {
    const production = { ...local, smtpHost: 'smtp.example.com', host: '0.0.0.0' };
    expect(submissionAddress(production, { port: 587, tls_port: 465 })).toEqual({
      host: 'smtp.example.com',
      port: 587,
      tls_port: 465,
      certificate: { self_signed: true, path: null },
    });
    const certified = submissionAddress({ ...production, tlsCertFile: '/etc/tls/smtp.pem' }, ports);
    expect(certified.certificate).toEqual({ self_signed: false, path: null });
  });

  it('says a configured certificate is not self-signed on a local server too', () => {
    expect(submissionAddress({ ...local, tlsCertFile: '/etc/tls/local.pem' }, ports).certificate).toEqual({
      self_signed: false,
      path: null,
    });
  });
});
