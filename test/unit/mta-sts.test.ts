import { describe, expect, it } from 'vitest';
import { mxMatches, parsePolicy } from '../../src/delivery/direct/mta-sts.ts';

describe('an MTA-STS policy file (RFC 8461 §3.2)', () => {
  it('reads the mode, every mx pattern and max_age', () => {
    expect(
      parsePolicy(
        'version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.Example.net.\r\nmax_age: 604800\r\n',
      ),
    ).toEqual({ mode: 'enforce', mx: ['mail.example.com', '*.example.net'], maxAge: 604800 });
    expect(parsePolicy('version: STSv1\nmode: none\nmax_age: 86400\n')).toEqual({
      mode: 'none',
      mx: [],
      maxAge: 86400,
    });
  });

  it('refuses what is not a policy, saying why', () => {
    expect(parsePolicy('<html>not found</html>')).toEqual({ error: 'version is not STSv1' });
    expect(parsePolicy('version: STSv1\nmode: strict\nmx: a.b\nmax_age: 1')).toEqual({
      error: 'unknown mode strict',
    });
    expect(parsePolicy('version: STSv1\nmode: enforce\nmx: a.b')).toEqual({
      error: 'max_age is missing or out of range',
    });
    expect(parsePolicy('version: STSv1\nmode: testing\nmax_age: 10')).toEqual({ error: 'no mx pattern' });
  });
});

describe('an MX host against a policy pattern (§4.1)', () => {
  it('matches a name exactly, and a wildcard for one label only', () => {
    expect(mxMatches('mail.example.com', 'mail.example.com')).toBe(true);
    expect(mxMatches('mail.example.com', 'mx.example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'mx1.example.com')).toBe(true);
    expect(mxMatches('*.example.com', 'a.b.example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'example.com')).toBe(false);
    expect(mxMatches('*.example.com', 'badexample.com')).toBe(false);
  });
});
