import { createHash, createPrivateKey, type KeyObject, sign } from 'node:crypto';

/** A DKIM signing identity: the domain (d=), the selector (s=) and the private key. */
export interface DkimKey {
  domain: string;
  selector: string;
  privateKey: KeyObject;
}

export function dkimKey(domain: string, selector: string, privateKeyPem: string): DkimKey {
  return { domain, selector, privateKey: createPrivateKey(privateKeyPem) };
}

// Headers we sign when present; From is signed twice (over-signed) so no second From can be added.
const SIGNED_HEADERS = [
  'from',
  'sender',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'to',
  'cc',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'feedback-id',
  'x-posthorn-project',
  'x-posthorn-stream',
];

/** Relaxed body canonicalisation (RFC 6376 3.4.4). */
export function relaxedBody(body: string): string {
  // whitespace ending a line goes; any other run of it (or a tab) becomes one space. A single
  // space inside a line is not matched, so the common text is not rewritten space by space, and
  // no pattern here backtracks (a long run of spaces stays linear)
  const text = body.replace(/[ \t]{2,}|\t| (?=\r\n|$)/g, (run, at: number, all: string) => {
    const end = at + run.length;
    return end === all.length || (all[end] === '\r' && all[end + 1] === '\n') ? '' : ' ';
  });
  let end = text.length;
  while (end >= 2 && text[end - 2] === '\r' && text[end - 1] === '\n') end -= 2;
  return end === 0 ? '' : `${text.slice(0, end)}\r\n`;
}

/** Relaxed header canonicalisation (RFC 6376 3.4.2) of one `Name: value` field (may be folded). */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const name = field.slice(0, colon).trim().toLowerCase();
  const value = field
    .slice(colon + 1)
    .replace(/\r\n(?=[ \t])/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${name}:${value}`;
}

/** Splits a header block into fields, keeping folded continuation lines with their field. */
function headerFields(head: string): string[] {
  const fields: string[] = [];
  for (const line of head.split('\r\n')) {
    if (/^[ \t]/.test(line) && fields.length > 0) fields[fields.length - 1] += `\r\n${line}`;
    else if (line) fields.push(line);
  }
  return fields;
}

/**
 * Signs a message with rsa-sha256, relaxed/relaxed, and returns it (line ends as CRLF) with the DKIM-Signature
 * header prepended: one body hash and one RSA signature per message.
 */
export function signDkim(raw: Buffer, key: DkimKey, now = new Date()): Buffer {
  const { unsigned, data, text } = signingInput(raw, key, now);
  const signature = sign('sha256', data, key.privateKey).toString('base64');
  return Buffer.from(`${unsigned}${foldBase64(signature)}\r\n${text}`, 'latin1');
}

/**
 * As signDkim, with the RSA signature computed on libuv's thread pool (crypto.sign with a
 * callback) rather than the main thread: a worker signing a thousand messages a second keeps its
 * event loop for the SMTP dialogues.
 */
export async function signDkimAsync(raw: Buffer, key: DkimKey, now = new Date()): Promise<Buffer> {
  const { unsigned, data, text } = signingInput(raw, key, now);
  const signature = await new Promise<Buffer>((resolve, reject) =>
    sign('sha256', data, key.privateKey, (err, result) => (err ? reject(err) : resolve(result))),
  );
  return Buffer.from(`${unsigned}${foldBase64(signature.toString('base64'))}\r\n${text}`, 'latin1');
}

/** The DKIM-Signature header without its b= value, the bytes to sign, and the message text (CRLF). */
function signingInput(raw: Buffer, key: DkimKey, now: Date) {
  // byte-preserving (latin1); bare LFs become CRLF as they would on the wire, so the hashes match
  const text = raw.toString('latin1').replace(/\r?\n/g, '\r\n');
  const split = text.indexOf('\r\n\r\n');
  const head = split === -1 ? text : text.slice(0, split);
  const body = split === -1 ? '' : text.slice(split + 4);
  const bodyHash = createHash('sha256').update(relaxedBody(body), 'latin1').digest('base64');

  const fields = headerFields(head);
  const byName = new Map<string, string[]>();
  for (const f of fields) {
    const name = f.slice(0, f.indexOf(':')).trim().toLowerCase();
    byName.set(name, [...(byName.get(name) ?? []), f]);
  }
  const names: string[] = [];
  const canonical: string[] = [];
  for (const name of SIGNED_HEADERS) {
    const instances = byName.get(name);
    if (!instances) continue;
    // sign the last instance (RFC 6376 5.4.2: bottom-up)
    names.push(name);
    canonical.push(`${relaxedHeader(instances[instances.length - 1])}\r\n`);
  }
  names.push('from'); // over-signing: a From added later breaks the signature

  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${key.domain}`,
    `s=${key.selector}`,
    `t=${Math.floor(now.getTime() / 1000)}`,
    `h=${names.join(':')}`,
    `bh=${bodyHash}`,
    'b=',
  ];
  const unsigned = `DKIM-Signature: ${tags.join('; ')}`;
  return { unsigned, data: Buffer.from(canonical.join('') + relaxedHeader(unsigned), 'latin1'), text };
}

/** Folds the signature so no header line exceeds 78 characters (whitespace is ignored in b=). */
function foldBase64(value: string): string {
  const parts: string[] = [];
  for (let i = 0; i < value.length; i += 72) parts.push(value.slice(i, i + 72));
  return parts.join('\r\n ');
}
