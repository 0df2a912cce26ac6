import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { DomainContext } from '../../src/domain/core/context.ts';
import { createSecrets } from '../../src/domain/core/secrets.ts';
import {
  clickToken,
  openToken,
  publicUrls,
  readToken,
  unsubscribeToken,
} from '../../src/domain/marketing/tokens.ts';
import { userAgentClass } from '../../src/domain/marketing/user-agents.ts';

// tokens need only the secrets and the public URL: nothing to look up
const contextWith = (secret: string) =>
  ({
    secrets: createSecrets(secret),
    config: loadConfig({ POSTHORN_PUBLIC_URL: 'https://mail.example.com/', POSTHORN_SECRET: secret }),
  }) as unknown as DomainContext;
const ctx = contextWith('s'.repeat(40));
const other = contextWith('t'.repeat(40));

const emailId = randomUUID();
const contactId = randomUUID();

/** Every one-character change of a token. */
function mutations(token: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < token.length; i++) {
    const c = token[i] === 'A' ? 'B' : 'A';
    out.push(token.slice(0, i) + c + token.slice(i + 1));
  }
  return out;
}

describe('marketing tokens', () => {
  it('round-trip the ids they sign, compact and URL-safe', () => {
    const u = unsubscribeToken(ctx, { emailId, contactId });
    expect(u).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(u.length).toBeLessThan(70);
    expect(readToken(ctx, 'unsubscribe', u)).toEqual({ emailId, contactId });
    expect(readToken(ctx, 'open', openToken(ctx, emailId))).toEqual({ emailId });
    const url = 'https://shop.example.com/sale?utm_source=mail&x=1#top';
    expect(readToken(ctx, 'click', clickToken(ctx, emailId, 7, url))).toEqual({ emailId, linkIndex: 7, url });
  });

  it('refuse any changed character, a truncation, an extension and another server secret', () => {
    const tokens = [
      ['unsubscribe', unsubscribeToken(ctx, { emailId, contactId })],
      ['open', openToken(ctx, emailId)],
      ['click', clickToken(ctx, emailId, 0, 'https://example.com/a')],
    ] as const;
    for (const [kind, token] of tokens) {
      for (const changed of mutations(token)) expect(readToken(ctx, kind, changed)).toBeNull();
      expect(readToken(ctx, kind, token.slice(0, -1))).toBeNull();
      expect(readToken(ctx, kind, token.slice(0, 10))).toBeNull();
      expect(readToken(ctx, kind, `${token}A`)).toBeNull();
      expect(readToken(ctx, kind, `${token}=`)).toBeNull();
      expect(readToken(ctx, kind, '')).toBeNull();
      expect(readToken(other, kind, token)).toBeNull();
    }
  });

  it('refuse a token of another kind', () => {
    const open = openToken(ctx, emailId);
    expect(readToken(ctx, 'click', open)).toBeNull();
    expect(readToken(ctx, 'unsubscribe', open)).toBeNull();
    const unsub = unsubscribeToken(ctx, { emailId, contactId });
    expect(readToken(ctx, 'open', unsub)).toBeNull();
    expect(readToken(ctx, 'click', unsub)).toBeNull();
    expect(readToken(ctx, 'open', clickToken(ctx, emailId, 1, 'https://example.com/'))).toBeNull();
  });

  it('sign only absolute http(s) links, percent-encoding what a Location header cannot carry', () => {
    expect(() => clickToken(ctx, emailId, 0, 'javascript:alert(1)')).toThrow(/http/);
    expect(() => clickToken(ctx, emailId, 0, '/relative')).toThrow(/http/);
    expect(() => clickToken(ctx, emailId, 0, `https://example.com/${'a'.repeat(5000)}`)).toThrow(/bytes/);
    expect(() => clickToken(ctx, emailId, -1, 'https://example.com/')).toThrow(/index/);
    expect(() => openToken(ctx, 'not-an-id')).toThrow(/id/);
    const read = readToken(ctx, 'click', clickToken(ctx, emailId, 2, 'https://example.com/café menu'));
    expect(read?.url).toBe('https://example.com/caf%C3%A9%20menu');
  });

  it('build the public links under POSTHORN_PUBLIC_URL', () => {
    const urls = publicUrls(ctx, { emailId, contactId });
    expect(urls.unsubscribe).toBe(
      `https://mail.example.com/u/${unsubscribeToken(ctx, { emailId, contactId })}`,
    );
    expect(urls.open).toBe(`https://mail.example.com/t/o/${openToken(ctx, emailId)}`);
    expect(urls.click(3, 'https://example.com/')).toBe(
      `https://mail.example.com/t/c/${clickToken(ctx, emailId, 3, 'https://example.com/')}`,
    );
    expect(publicUrls(ctx, { emailId, contactId: null }).unsubscribe).toBeNull();
  });
});

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const IPHONE_MAIL =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148';
const OUTLOOK = 'Mozilla/4.0 (compatible; ms-office; MSOffice 16) Microsoft Outlook 16.0.17328; Pro';

describe('userAgentClass', () => {
  it('counts browsers, mail apps and the reader proxies of Gmail and Yahoo as people', () => {
    expect(userAgentClass(CHROME, 'GET')).toBe('human');
    expect(userAgentClass(IPHONE_MAIL, 'GET')).toBe('human');
    expect(userAgentClass(OUTLOOK, 'GET')).toBe('human');
    expect(
      userAgentClass(
        'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
        'GET',
      ),
    ).toBe('human');
    expect(
      userAgentClass('YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html', 'GET'),
    ).toBe('human');
    expect(userAgentClass(CHROME, 'GET', 60_000)).toBe('human');
  });

  it("flags Apple's privacy proxy, link scanners, bots and HTTP libraries as machines", () => {
    expect(userAgentClass('Mozilla/5.0', 'GET')).toBe('machine');
    for (const ua of [
      'Mozilla/5.0 (compatible; Microsoft SafeLinks)',
      'Microsoft Office Existence Discovery',
      'Barracuda Sentinel (EE)',
      'Mimecast URL Protect',
      'Proofpoint URL Defense',
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0)',
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36',
      'python-requests/2.31.0',
      'curl/8.5.0',
      'Go-http-client/1.1',
    ])
      expect(userAgentClass(ua, 'GET'), ua).toBe('machine');
  });

  it('flags HEAD requests, a missing user agent and fetches within 2 s of sending as machines', () => {
    expect(userAgentClass(CHROME, 'HEAD')).toBe('machine');
    expect(userAgentClass(undefined, 'GET')).toBe('machine');
    expect(userAgentClass('  ', 'GET')).toBe('machine');
    expect(userAgentClass(CHROME, 'GET', 800)).toBe('machine');
  });
});
