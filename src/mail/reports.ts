export interface BounceRecipient {
  /** Final-Recipient (or Original-Recipient), lower-cased, without the `rfc822;` type. */
  recipient: string;
  /** failed | delayed | delivered | relayed | expanded */
  action: string;
  /** Enhanced status code, e.g. 5.1.1 */
  status: string;
  /** hard: failed with 5.x.x; soft: 4.x.x or delayed */
  bounceType: 'hard' | 'soft';
  diagnostic: string | null;
  remoteMta: string | null;
}

export interface OriginalMessage {
  messageId: string | null;
  returnPath: string | null;
  to: string | null;
  /** Lower-cased header name → first value, unfolded. */
  headers: Record<string, string>;
}

export type MailReport =
  | {
      kind: 'bounce';
      recipients: BounceRecipient[];
      original: OriginalMessage | null;
      reportingMta: string | null;
    }
  | {
      kind: 'complaint';
      feedbackType: string;
      recipient: string | null;
      userAgent: string | null;
      sourceIp: string | null;
      arrivalDate: string | null;
      original: OriginalMessage | null;
    };

type Fields = Map<string, string>;

/** "Name: value" lines with continuation lines unfolded; the first value of each name wins. */
function parseFields(block: string): Fields {
  const fields: Fields = new Map();
  const unfolded = block.replace(/\r?\n[ \t]+/g, ' ');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
  }
  return fields;
}

/** Field blocks separated by blank lines (a delivery-status body: per-message, then per-recipient). */
function fieldBlocks(text: string): Fields[] {
  return text
    .split(/\r?\n[ \t]*\r?\n/)
    .map((b) => b.trim())
    .filter(Boolean)
    .map(parseFields);
}

/** Drops an RFC 3464 type prefix (`rfc822;`, `dns;`, `smtp;`). */
function untyped(value: string | undefined): string | null {
  if (value === undefined) return null;
  const stripped = value.replace(/^[\w-]+\s*;\s*/, '').trim();
  return stripped === '' ? null : stripped;
}

function bareAddress(value: string | null): string | null {
  if (!value) return null;
  const inside = /<([^<>]+)>/.exec(value)?.[1] ?? value;
  const address = inside.trim().toLowerCase();
  return address.includes('@') ? address : null;
}

/** Status from the field, else from the enhanced or basic code in the diagnostic. */
function statusOf(fields: Fields, diagnostic: string | null): string | null {
  const field = /([245])\.(\d{1,3})\.(\d{1,3})/.exec(fields.get('status') ?? '');
  if (field) return `${field[1]}.${field[2]}.${field[3]}`;
  const enhanced = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/.exec(diagnostic ?? '');
  if (enhanced) return `${enhanced[1]}.${enhanced[2]}.${enhanced[3]}`;
  const basic = /^\s*([245])\d\d\b/.exec(diagnostic ?? '');
  return basic ? `${basic[1]}.0.0` : null;
}

function parseOriginal(text: string): OriginalMessage {
  const headerEnd = text.search(/\r?\n\r?\n/);
  const fields = parseFields(headerEnd < 0 ? text : text.slice(0, headerEnd));
  const returnPath = fields.get('return-path');
  return {
    messageId: fields.get('message-id')?.trim() ?? null,
    returnPath: returnPath ? (/<([^<>]*)>/.exec(returnPath)?.[1] ?? returnPath).trim() || null : null,
    to: fields.get('to') ?? null,
    headers: Object.fromEntries(fields),
  };
}

interface Part {
  type: string;
  params: Record<string, string>;
  body: string;
}

function contentType(value: string | undefined): { type: string; params: Record<string, string> } {
  const [type, ...rest] = (value ?? 'text/plain').split(';');
  const params: Record<string, string> = {};
  for (const p of rest) {
    const eq = p.indexOf('=');
    if (eq > 0)
      params[p.slice(0, eq).trim().toLowerCase()] = p
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, '');
  }
  return { type: type.trim().toLowerCase(), params };
}

function decode(body: string, encoding: string | undefined): string {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (e === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

/**
 * The leaf parts of a MIME entity, walking nested multiparts (but not into attached messages).
 * Reports need only this much MIME: mailparser folds message/delivery-status into the text body.
 */
function leafParts(entity: string, depth = 0): Part[] {
  const split = entity.search(/\r?\n\r?\n/);
  const fields = parseFields(split < 0 ? entity : entity.slice(0, split));
  const body = split < 0 ? '' : entity.slice(split).replace(/^\r?\n\r?\n/, '');
  const { type, params } = contentType(fields.get('content-type'));
  if (!type.startsWith('multipart/') || !params.boundary || depth > 5) {
    return [{ type, params, body: decode(body, fields.get('content-transfer-encoding')) }];
  }
  const delimiter = `--${params.boundary}`;
  const chunks = body.split(
    new RegExp(`^${delimiter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:--)?[ \t]*\r?$`, 'm'),
  );
  // chunks[0] is the preamble; a last chunk after the closing delimiter is the epilogue
  return [
    { type, params, body: '' },
    ...chunks.slice(1).flatMap((c) => leafParts(c.replace(/^\r?\n/, ''), depth + 1)),
  ];
}

/** Recognises a DSN (RFC 3464/6533) or an ARF report (RFC 5965); null for anything else. */
export async function parseMailReport(raw: Buffer | string): Promise<MailReport | null> {
  const parts = leafParts(typeof raw === 'string' ? raw : raw.toString('utf8'));
  const report = parts.find((p) => p.type === 'multipart/report');
  if (!report) return null;
  const reportType = (report.params['report-type'] ?? '').toLowerCase();
  const find = (...types: string[]) => parts.find((p) => types.includes(p.type));
  const originalPart = find(
    'message/rfc822',
    'text/rfc822-headers',
    'message/global',
    'message/global-headers',
  );
  const original = originalPart ? parseOriginal(originalPart.body) : null;

  const feedback = find('message/feedback-report');
  if (reportType === 'feedback-report' || feedback) {
    if (!feedback) return null;
    const fields = parseFields(feedback.body);
    return {
      kind: 'complaint',
      feedbackType: (fields.get('feedback-type') ?? 'abuse').toLowerCase(),
      recipient: bareAddress(fields.get('original-rcpt-to') ?? null) ?? bareAddress(original?.to ?? null),
      userAgent: fields.get('user-agent') ?? null,
      sourceIp: fields.get('source-ip') ?? null,
      arrivalDate: fields.get('arrival-date') ?? fields.get('received-date') ?? null,
      original,
    };
  }

  const status = find('message/delivery-status', 'message/global-delivery-status');
  if (!status) return null;
  const [perMessage, ...perRecipient] = fieldBlocks(status.body);
  const recipients: BounceRecipient[] = [];
  for (const fields of perRecipient) {
    const recipient = bareAddress(untyped(fields.get('final-recipient') ?? fields.get('original-recipient')));
    if (!recipient) continue;
    const action = (fields.get('action') ?? '').trim().toLowerCase();
    const diagnostic = untyped(fields.get('diagnostic-code'));
    const code = statusOf(fields, diagnostic);
    if (!code) continue;
    recipients.push({
      recipient,
      action: action || (code.startsWith('5') ? 'failed' : code.startsWith('4') ? 'delayed' : 'delivered'),
      status: code,
      bounceType: code.startsWith('5') && action !== 'delayed' ? 'hard' : 'soft',
      diagnostic,
      remoteMta: untyped(fields.get('remote-mta')),
    });
  }
  return { kind: 'bounce', recipients, original, reportingMta: untyped(perMessage?.get('reporting-mta')) };
}
