import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type FoundReport, readReportFile } from '../../src/domain/dmarc/extract.ts';
import { REPORT_COUNT } from '../../src/domain/dmarc/limits.ts';
import { Budget, OverBudget, unpack } from '../../src/domain/dmarc/unpack.ts';
import { zipBomb } from '../helpers/dmarc.ts';

/**
 * What a report file may make the reader do (issue 47, build item 1): bytes counted as they come
 * out against the message's budget, not as a zip declares them; a zip's entries never share their
 * data; what cannot be read (a DOCTYPE with its entities, 200,000 nested elements, a count of
 * 1e23, a date past year 9999) is an unreadable report with its reason, never an error.
 */

const MB = 1024 * 1024;

/** A zip of these members, each deflated, each declaring 1,000 bytes whatever it holds. */
function zipOf(members: { name: string; content: Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const directory: Buffer[] = [];
  let offset = 0;
  for (const { name, content } of members) {
    const data = deflateRawSync(content);
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(8, 8);
    header.writeUInt32LE(data.length, 18);
    header.writeUInt32LE(1_000, 22);
    header.writeUInt16LE(name.length, 26);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt32LE(data.length, 20);
    entry.writeUInt32LE(1_000, 24);
    entry.writeUInt16LE(name.length, 28);
    entry.writeUInt32LE(offset, 42);
    const local = Buffer.concat([header, Buffer.from(name), data]);
    locals.push(local);
    directory.push(Buffer.concat([entry, Buffer.from(name)]));
    offset += local.length;
  }
  const central = Buffer.concat(directory);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(central.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, central, end]);
}

const reasonOf = (found: FoundReport[]) => {
  expect(found.map((f) => f.kind)).toEqual(['unreadable']);
  return (found[0] as { reason: string }).reason;
};

const feedback = (inner: string, head = '') =>
  `<?xml version="1.0"?>${head}<feedback><report_metadata><org_name>x.example</org_name><report_id>1</report_id>` +
  '<date_range><begin>1700000000</begin><end>1700086399</end></date_range></report_metadata>' +
  `<policy_published><domain>a.example</domain></policy_published>${inner}</feedback>`;
const row = (count: string) =>
  `<record><row><source_ip>192.0.2.1</source_ip><count>${count}</count></row></record>`;

describe('decompression', () => {
  it('refuses a zip whose directory names one member 30 times, before inflating it', () => {
    const bomb = zipBomb(10 * MB, 30);
    expect(() => unpack(bomb)).toThrow(/^the zip entries report-1\.xml and report-2\.xml overlap/);
    expect(reasonOf(readReportFile(bomb, 'bomb.zip'))).toMatch(
      /overlap \(a zip bomb's directory\): refused$/,
    );
  });

  it('counts what comes out, not what the zip declares: one budget for all its members', () => {
    const zip = zipOf([
      { name: 'a.xml', content: Buffer.alloc(30 * MB) },
      { name: 'b.xml', content: Buffer.alloc(30 * MB) },
    ]);
    expect(() => unpack(zip)).toThrow(OverBudget);
    expect(reasonOf(readReportFile(zip, 'two.zip'))).toBe(
      'the reports decompress to more than 50 MB in all (the limit of one message)',
    );
    // one budget across files: what the first took, the second cannot
    const budget = new Budget(40 * MB);
    const one = zipOf([{ name: 'a.xml', content: Buffer.alloc(30 * MB) }]);
    expect(unpack(one, budget)[0].content.length).toBe(30 * MB);
    expect(budget.bytes).toBe(10 * MB);
    expect(() => unpack(one, budget)).toThrow(OverBudget);
  });

  it('refuses more files than a message may carry', () => {
    const many = zipOf(
      Array.from({ length: 101 }, (_, i) => ({ name: `${i}.xml`, content: Buffer.from('<a/>') })),
    );
    expect(reasonOf(readReportFile(many, 'many.zip'))).toBe('the zip holds 101 entries, more than 100');
  });
});

describe('what cannot be read is kept with its reason', () => {
  it('a DOCTYPE: external entities (XXE) and entity expansion are never read', () => {
    const xxe = feedback(
      `${row('1')}<x>&xxe;</x>`,
      '<!DOCTYPE feedback [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
    );
    const laughs = feedback(
      '<x>&lol3;</x>',
      '<!DOCTYPE feedback [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;">]>',
    );
    for (const xml of [xxe, laughs])
      expect(reasonOf(readReportFile(Buffer.from(xml), 'r.xml'))).toBe(
        'the XML declares a DOCTYPE: its entities and external references are not read',
      );
  });

  it('200,000 nested elements', () => {
    const deep = feedback(`${'<x>'.repeat(200_000)}${'</x>'.repeat(200_000)}`);
    expect(reasonOf(readReportFile(Buffer.from(deep), 'deep.xml'))).toMatch(/^the XML could not be read: /);
  });

  it('a count of 1e23, as digits or as a float, and one past the bound', () => {
    expect(reasonOf(readReportFile(Buffer.from(feedback(row('1'.padEnd(24, '0')))), 'r.xml'))).toBe(
      `record 1: count is 10000000000000000000..., more than ${REPORT_COUNT}`,
    );
    expect(reasonOf(readReportFile(Buffer.from(feedback(row('1e23'))), 'r.xml'))).toBe(
      'record 1: count is not a whole number: "1e23"',
    );
    expect(reasonOf(readReportFile(Buffer.from(feedback(row(String(REPORT_COUNT + 1)))), 'r.xml'))).toMatch(
      /^record 1: count is 1000000001, more than/,
    );
    const [fine] = readReportFile(Buffer.from(feedback(row(String(REPORT_COUNT)))), 'r.xml');
    expect(fine.kind).toBe('aggregate');
  });

  it('a date range past the year 9999', () => {
    const xml = feedback(row('1')).replace('<end>1700086399</end>', '<end>99999999999999999999</end>');
    expect(reasonOf(readReportFile(Buffer.from(xml), 'r.xml'))).toMatch(/^date_range\/end is 9999/);
  });

  it('TLS counts of 1e23 and dates past the year 9999', () => {
    const tls = (sessions: number, end = '2024-01-02T00:00:00Z') =>
      Buffer.from(
        JSON.stringify({
          'organization-name': 'x',
          'report-id': '1',
          'date-range': { 'start-datetime': '2024-01-01T00:00:00Z', 'end-datetime': end },
          policies: [
            {
              policy: { 'policy-domain': 'a.example' },
              summary: { 'total-successful-session-count': sessions },
            },
          ],
        }),
      );
    expect(reasonOf(readReportFile(tls(1e23), 'r.json'))).toMatch(
      /^policies\[0\]: total-successful-session-count is not a count \(a whole number up to 1000000000\): 1e\+23$/,
    );
    expect(reasonOf(readReportFile(tls(1, '+275760-01-01T00:00:00Z'), 'r.json'))).toMatch(
      /^date-range\/end-datetime is not a date/,
    );
  });

  it('NUL characters, which PostgreSQL text cannot hold, are left out', () => {
    const xml = feedback(row('1')).replace('<org_name>x.example', '<org_name>x.exa&#0;mple\u0000');
    const [found] = readReportFile(Buffer.from(xml), 'r.xml');
    expect(found).toMatchObject({ kind: 'aggregate', report: { reporter: { org_name: 'x.example' } } });
  });
});
