import type { AddressObject, ParsedMail, SimpleParserOptions, Source } from 'mailparser';

/**
 * mailparser's `simpleParser`, loaded on first use: a process that parses no mail (a worker, an API
 * whose mailbox no one reads) does not carry the parser and its charset tables.
 */
export async function parseMail(source: Source, options?: SimpleParserOptions): Promise<ParsedMail> {
  const { simpleParser } = await import('mailparser');
  return simpleParser(source, options);
}

/** What a received or captured message shows of mailparser's result, read one way everywhere. */

/** The addresses of an address header (To, Cc, Reply-To), groups flattened, in order. */
export function addressList(field: AddressObject | AddressObject[] | undefined): string[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects
    .flatMap((o) => o.value.flatMap((v) => (v.group ?? [v]).map((m) => m.address ?? '')))
    .filter(Boolean);
}

/** Every header line as written, in order, as `[name, value]` with folded lines joined. */
export function headerPairs(parsed: ParsedMail): [string, string][] {
  return parsed.headerLines.map(({ line }) => {
    const colon = line.indexOf(':');
    return [
      line.slice(0, colon).trim(),
      line
        .slice(colon + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim(),
    ];
  });
}

// one RFC 2047 encoded word: =?charset(*language)?B|Q?text?=
const ENCODED_WORD = /=\?([^?\s*]+)(?:\*[^?\s]*)?\?([bBqQ])\?([^?\s]*)\?=/g;

function decodeWord(charset: string, encoding: string, text: string): string | null {
  const bytes =
    encoding.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64')
      : Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
          'latin1',
        );
  try {
    return new TextDecoder(charset.toLowerCase()).decode(bytes);
  } catch {
    return null; // a charset this runtime does not know: the word stays as written
  }
}

/**
 * A header value with its RFC 2047 encoded words decoded (`=?UTF-8?Q?Gr=C3=BC=C3=9Fe?=` → `Grüße`);
 * the space between two adjacent encoded words is dropped, as the RFC says.
 */
export function decodeEncodedWords(value: string): string {
  return value
    .replace(/(\?=)\s+(?==\?)/g, '$1')
    .replace(ENCODED_WORD, (word, charset: string, encoding: string, text: string) => {
      return decodeWord(charset, encoding, text) ?? word;
    });
}
