import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { newRsaKeyPair } from '../../src/domain/sending-domains/dkim-keys.ts';
import {
  customerDomainRecords,
  quoteTxtString,
  sharedDomainRecords,
  TXT_STRING_MAX,
  txtChunks,
  zoneValue,
} from '../../src/domain/sending-domains/dns-records.ts';

/**
 * Reads a TXT value in zone-file presentation form back into its character-strings, as a DNS
 * server loading the zone would (RFC 1035 5.1): written here independently of the code under test.
 */
function parsePresentation(text: string): Buffer[] {
  const strings: Buffer[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === ' ') {
      i++;
      continue;
    }
    if (text[i] !== '"') throw new Error(`expected a quote at ${i} in ${text}`);
    i++;
    const bytes: number[] = [];
    while (text[i] !== '"') {
      if (i >= text.length) throw new Error(`unterminated string in ${text}`);
      if (text[i] === '\\') {
        if (/^\d{3}$/.test(text.slice(i + 1, i + 4))) {
          bytes.push(Number(text.slice(i + 1, i + 4)));
          i += 4;
        } else {
          bytes.push(text.charCodeAt(i + 1));
          i += 2;
        }
      } else {
        const code = text.charCodeAt(i);
        if (code < 0x20 || code > 0x7e) throw new Error(`unescaped byte ${code} in ${text}`);
        bytes.push(code);
        i++;
      }
    }
    i++;
    strings.push(Buffer.from(bytes));
  }
  return strings;
}

describe('txtChunks and zoneValue (TXT values over 255 characters)', () => {
  it.each([
    [1, [1]],
    [255, [255]],
    [256, [255, 1]],
    [510, [255, 255]],
    [511, [255, 255, 1]],
  ])('splits %i characters into strings of %j', (length, sizes) => {
    const value = Array.from({ length }, (_, i) => 'abcdefghij'[i % 10]).join('');
    const chunks = txtChunks(value);
    expect(chunks.map((c) => c.length)).toEqual(sizes);
    expect(chunks.join('')).toBe(value);

    const presented = zoneValue({ type: 'TXT', value });
    expect(presented).toBe(chunks.map((c) => `"${c}"`).join(' '));
    const parsed = parsePresentation(presented);
    expect(parsed.map((b) => b.length)).toEqual(sizes);
    expect(Buffer.concat(parsed).toString('utf8')).toBe(value);
  });

  it('escapes a quote and a backslash, counting the 255 bytes before escaping', () => {
    expect(quoteTxtString('say "hi" \\ bye')).toBe('"say \\"hi\\" \\\\ bye"');
    expect(zoneValue({ type: 'TXT', value: 'a"b\\c' })).toBe('"a\\"b\\\\c"');

    // a quote and a backslash as the 255th and 256th characters: the first string shows 256
    // characters between its quotes but holds 255 bytes, as a DNS server counts them
    const value = `${'x'.repeat(254)}"\\${'y'.repeat(300)}`;
    const presented = zoneValue({ type: 'TXT', value });
    const parsed = parsePresentation(presented);
    expect(parsed.map((b) => b.length)).toEqual([255, 255, 46]);
    expect(presented.startsWith(`"${'x'.repeat(254)}\\"" "\\\\y`)).toBe(true);
    expect(Buffer.concat(parsed).toString('utf8')).toBe(value);
  });

  it('never cuts a multi-byte character and writes non-ASCII bytes as \\DDD', () => {
    const value = `${'a'.repeat(254)}é${'b'.repeat(10)}`; // é is two bytes: it cannot fit in the first string
    const chunks = txtChunks(value);
    expect(chunks).toEqual(['a'.repeat(254), `é${'b'.repeat(10)}`]);
    expect(zoneValue({ type: 'TXT', value: 'é' })).toBe('"\\195\\169"');
    expect(Buffer.concat(parsePresentation(zoneValue({ type: 'TXT', value }))).toString('utf8')).toBe(value);
    expect(txtChunks('')).toEqual(['']);
    expect(zoneValue({ type: 'TXT', value: '' })).toBe('""');
  });

  it('writes an MX as priority and host, and leaves other values as they are', () => {
    expect(zoneValue({ type: 'MX', value: 'mx.example.net', priority: 10 })).toBe('10 mx.example.net');
    expect(zoneValue({ type: 'A', value: '192.0.2.1' })).toBe('192.0.2.1');
  });

  it('splits a 2048-bit DKIM key into two strings that join back to the exact record', () => {
    const pair = newRsaKeyPair();
    const value = `v=DKIM1; k=rsa; p=${pair.publicBase64}`;
    expect(value.length).toBeGreaterThan(TXT_STRING_MAX);
    const parsed = parsePresentation(zoneValue({ type: 'TXT', value }));
    expect(parsed.length).toBe(2);
    for (const part of parsed) expect(part.length).toBeLessThanOrEqual(TXT_STRING_MAX);
    expect(Buffer.concat(parsed).toString('utf8')).toBe(value);
  });
});

const config = {
  sharedDomain: 'mail.example.net',
  spfInclude: '_spf.mail.example.net',
  inboundHost: 'mx.mail.example.net',
  inboundDomain: 'inbound.mail.example.net',
  smtpHost: 'smtp.mail.example.net',
};

describe('sharedDomainRecords', () => {
  const records = sharedDomainRecords(config, { selector: 'posthorn1', publicBase64: 'MIIBkey' });
  const find = (type: string, name: string) => records.filter((r) => r.type === type && r.name === name);

  it('lists DKIM, the SPF of the sending IPs and of the bounce domain, the bounce MX and DMARC', () => {
    expect(find('A', 'smtp.mail.example.net')).toHaveLength(1);
    expect(find('TXT', 'posthorn1._domainkey.mail.example.net')).toMatchObject([
      { value: 'v=DKIM1; k=rsa; p=MIIBkey', required: true },
    ]);
    expect(find('TXT', '_spf.mail.example.net')[0].value).toMatch(/^v=spf1 ip4:.* -all$/);
    // the return path of shared-domain mail is bounces+...@mail.example.net: SPF and MX on the domain itself
    expect(find('TXT', 'mail.example.net')).toMatchObject([
      { value: 'v=spf1 include:_spf.mail.example.net ~all', required: true },
    ]);
    expect(find('MX', 'mail.example.net')).toMatchObject([
      { value: 'mx.mail.example.net', priority: 10, required: true },
    ]);
    expect(find('A', 'mx.mail.example.net')).toHaveLength(1);
    expect(find('TXT', '_dmarc.mail.example.net')[0].value).toMatch(/^v=DMARC1; p=none; rua=mailto:/);
    expect(find('MX', '*.inbound.mail.example.net')).toMatchObject([{ value: 'mx.mail.example.net' }]);
  });

  it('agrees with a customer domain on the include host and the MX target', () => {
    const customer = customerDomainRecords(
      config,
      {
        name: 'example.com',
        return_path: 'bounces',
        dkim_selector: 'phabc',
        next_dkim_selector: null,
        inbound_enabled: false,
      },
      new Map([['phabc', 'MIIBcustomer']]),
    );
    expect(customer.map((r) => [r.type, r.name, r.value])).toEqual([
      ['TXT', 'phabc._domainkey.example.com', 'v=DKIM1; k=rsa; p=MIIBcustomer'],
      ['TXT', 'bounces.example.com', 'v=spf1 include:_spf.mail.example.net ~all'],
      ['MX', 'bounces.example.com', 'mx.mail.example.net'],
      ['TXT', '_dmarc.example.com', 'v=DMARC1; p=none; rua=mailto:dmarc@example.com'],
    ]);
  });
});

describe('POSTHORN_DEFAULT_PLAN', () => {
  const base = { POSTHORN_SECRET: 's'.repeat(40), POSTHORN_DATA_DIR: '/nonexistent/posthorn-config-test' };

  it('defaults to unlimited and takes a known plan', () => {
    expect(loadConfig(base).defaultPlan).toBe('unlimited');
    expect(loadConfig({ ...base, POSTHORN_DEFAULT_PLAN: 'pro' }).defaultPlan).toBe('pro');
    expect(loadConfig({ ...base, POSTHORN_DEFAULT_PLAN: ' Unlimited ' }).defaultPlan).toBe('unlimited');
  });

  it('refuses an unknown plan, naming the variable and the plans', () => {
    expect(() => loadConfig({ ...base, POSTHORN_DEFAULT_PLAN: 'gold' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, POSTHORN_DEFAULT_PLAN: 'gold' })).toThrow(
      'POSTHORN_DEFAULT_PLAN must be one of free, starter, pro, unlimited, got "gold"',
    );
  });
});
