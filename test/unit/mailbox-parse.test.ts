import { describe, expect, it } from 'vitest';
import { normalizeHostname, parseAnyMailbox, parseMailbox } from '../../src/domain/core/addresses.ts';

/**
 * The quick path of parseMailbox (a plain `address` or `Name <address>`, read by one regular
 * expression, issue 29's accept path) answers exactly as addressparser does, and everything else
 * still goes through addressparser.
 */

const outcome = (parse: (s: string, f: string) => unknown, input: string) => {
  try {
    return { ok: parse(input, 'from') };
  } catch (err) {
    return { error: (err as Error).message };
  }
};

const INPUTS = [
  'news@bench.example',
  'Bench <news@bench.example>',
  'Bench<news@bench.example>',
  'Ada Lovelace <ada@example.org>',
  'Ada  Lovelace <ada@example.org>',
  ' Ada <ada@example.org>',
  'Ada <ada@example.org> ',
  'Zoë Ödegård <zoe@example.org>',
  'Shop-Team_2 <a.b+c@Mail.Example.COM>',
  'first.last+tag@EXAMPLE.org',
  "o'brien@example.ie",
  'A <a@b>',
  'a@b',
  'a@localhost',
  'a@123.45',
  'a@-bad.example',
  'a@xn--zz.example',
  'a..b@example.org',
  '.a@example.org',
  'Name <a@b.example',
  '"Quoted, Name" <q@example.org>',
  'Name (comment) <c@example.org>',
  '=?utf-8?q?Encoded?= <e@example.org>',
  'one@example.org, two@example.org',
  'Group: a@example.org;',
  '<bare@example.org>',
  'J. Smith <j@example.org>',
  `${'x'.repeat(65)}@example.org`,
  'no-at-sign',
  '',
];

describe('the quick path of parseMailbox', () => {
  it.each(INPUTS)('%j: as addressparser reads it', (input) => {
    expect(outcome(parseMailbox, input)).toEqual(outcome(parseAnyMailbox, input));
  });

  it('takes the plain forms, keeps the name and lower-cases the domain', () => {
    expect(parseMailbox('Bench <news@Bench.Example>', 'from')).toEqual({
      name: 'Bench',
      address: 'news@bench.example',
    });
    expect(parseMailbox('news@bench.example', 'from')).toEqual({ name: '', address: 'news@bench.example' });
  });

  it('checks plain host names as before, punycode through domainToASCII', () => {
    expect(normalizeHostname('Mail.Example.COM')).toBe('mail.example.com');
    expect(normalizeHostname('bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeHostname('a..b')).toBeNull();
    expect(normalizeHostname('-a.example')).toBeNull();
  });
});
