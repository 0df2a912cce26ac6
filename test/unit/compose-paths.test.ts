import addressparser from 'nodemailer/lib/addressparser';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';
import { describe, expect, it } from 'vitest';
import { formatMailbox } from '../../src/mail/address.ts';
import { relaxedBody } from '../../src/mail/dkim.ts';
import { mailboxParts, qp } from '../../src/mail/fast-compose.ts';

// The delivery path's shortcuts, each against the reference it stands in for: the answers must be
// the same for every input, the shortcut only taking less time on the common ones.

/** RFC 6376 3.4.4 as it was written before, line by line: the reference. */
function relaxedBodyByLines(body: string): string {
  const lines = body.split('\r\n').map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines.length === 0 ? '' : `${lines.join('\r\n')}\r\n`;
}

/** A seeded generator, so a failure names an input that can be found again. */
function random(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

function randomText(next: () => number, pieces: string[], length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += pieces[Math.floor(next() * pieces.length)];
  return out;
}

describe('relaxed body canonicalisation', () => {
  const cases = [
    '',
    '\r\n',
    '\r\n\r\n\r\n',
    'a',
    'a ',
    ' a',
    'a\r\n',
    'a \r\n',
    'a\t\r\n',
    'a  b\tc \t d\r\n\r\n',
    ' \t \r\n \r\n',
    'a\r',
    'a\r\r\n',
    'a \r\r\n',
    'a\n b  \n',
    'line one\r\n\r\nline  three \r\n \t\r\n',
    `${' '.repeat(5000)}x`,
    `x${' '.repeat(5000)}`,
  ];
  it.each(cases)('answers as the line-by-line reference for %j', (body) => {
    expect(relaxedBody(body)).toBe(relaxedBodyByLines(body));
  });

  it('answers as the reference for 5,000 random bodies', () => {
    const next = random(29);
    const pieces = ['a', 'b', ' ', ' ', '\t', '\r\n', '\r', '\n', '.', '=20'];
    for (let i = 0; i < 5_000; i++) {
      const body = randomText(next, pieces, Math.floor(next() * 40));
      expect(relaxedBody(body), JSON.stringify(body)).toBe(relaxedBodyByLines(body));
    }
  });
});

describe('quoted-printable bodies', () => {
  const reference = (body: string) => qpWrap(qpEncode(body), 76);
  const cases = [
    '',
    'plain text',
    `<p>${'Some words of a typical newsletter paragraph. '.repeat(20)}</p>`,
    'ends with a space ',
    'ends with a tab\t',
    'a space before a break \r\nnext',
    'a tab before a break\t\nnext',
    'an = sign',
    'naïve café ünïcödé',
    'emoji 📮 and more',
    'a\u0000control',
    `${'x'.repeat(75)}\r\n${'y'.repeat(76)}\r\n${'z'.repeat(77)}`,
  ];
  it.each(cases)('answers as nodemailer for %j', (body) => {
    expect(qp(body)).toBe(reference(body));
  });

  it('answers as nodemailer for 3,000 random bodies', () => {
    const next = random(31);
    const pieces = ['word', ' ', '\t', '\r\n', '\n', '=', 'é', '.', 'x'.repeat(30), '~', '📮'];
    for (let i = 0; i < 3_000; i++) {
      const body = randomText(next, pieces, Math.floor(next() * 60));
      expect(qp(body), JSON.stringify(body)).toBe(reference(body));
    }
  });
});

describe('a stored recipient read back', () => {
  const reference = (value: string) =>
    (addressparser(value, { flatten: true }) as { name: string; address: string }[])[0];
  const names = [
    '',
    'Ada',
    'Ada Lovelace',
    'Lovelace, Ada',
    'Ada "the Countess"',
    'Zoë Ümlaut',
    'A\\B',
    '  spaced  out ',
    'a  b',
    "O'Brien",
    '=?utf-8?Q?x?=',
    'x@y',
    'Ada (maths)',
    'semi;colon',
    '<angles>',
  ];
  const addresses = [
    'ada@example.com',
    'first.last+tag@sub.example.co.uk',
    "o'brien@example.ie",
    'x_y-z@xn--bcher-kva.example',
  ];
  for (const address of addresses)
    for (const name of names) {
      const stored = formatMailbox({ name, address });
      it(`reads ${stored} as addressparser does`, () => {
        expect(mailboxParts(stored)).toEqual(reference(stored));
      });
    }

  it.each([
    'Ada <ada@example.com>',
    'ada@example.com (Ada)',
    '"Ada" <ada@example.com>, b@example.com',
    'not an address',
  ])('falls back to addressparser for %j', (value) => {
    expect(mailboxParts(value)).toEqual(reference(value));
  });
});
