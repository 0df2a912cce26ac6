import { createHash } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { ParsedMail } from 'mailparser';
import { enqueue } from '../../db/enqueue.ts';
import type { InboundAttachmentMeta, InboundMessagesTable } from '../../db/schema.ts';
import { addressList, headerPairs } from '../../mail/parsed.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { projectsWithWebhooks } from '../webhooks/subscribed.ts';
import { requireInboundPlan } from './recipients.ts';

type InboundRow = Selectable<InboundMessagesTable>;
/** The project that reads its inbound mail: a plan without inbound reads nothing (402). */
type Reader = Pick<ProjectFacts, 'id' | 'plan'>;

/** Authentication results of a received message (mailauth), in the shape the API returns. */
export interface InboundAuth {
  spf: string;
  dkim: { domain: string | null; selector: string | null; result: string }[];
  dmarc: string;
  dmarc_policy: string | null;
  arc: string;
  authentication_results: string;
}

export interface ReceivedMessage {
  projectId: string;
  raw: Buffer;
  parsed: ParsedMail;
  envelope: { mailFrom: string | null; rcptTo: string[]; remoteIp: string | null; helo: string | null };
  auth: InboundAuth;
}

/**
 * Spam flags from what the authentication results and upstream filters say: a DMARC failure under a
 * reject or quarantine policy, SPF fail with no passing DKIM signature, or an upstream X-Spam-Flag.
 */
export function spamFlags(auth: InboundAuth, parsed: ParsedMail): { flagged: boolean; reasons: string[] } {
  const reasons: string[] = [];
  if (auth.dmarc === 'fail') {
    reasons.push(`DMARC failed${auth.dmarc_policy ? ` (policy ${auth.dmarc_policy})` : ''}`);
  }
  const dkimPass = auth.dkim.some((d) => d.result === 'pass');
  if (auth.spf === 'fail' && !dkimPass) reasons.push('SPF failed and no DKIM signature passed');
  const upstream = parsed.headers.get('x-spam-flag');
  if (typeof upstream === 'string' && /^yes/i.test(upstream.trim()))
    reasons.push('an upstream filter set X-Spam-Flag: YES');
  const strong = reasons.length > 0 && (auth.dmarc !== 'fail' || auth.dmarc_policy !== 'none');
  return { flagged: strong, reasons };
}

/** Stores a received message with its raw source and attachments, in one transaction. */
export async function storeInbound(ctx: Pick<DomainContext, 'db'>, m: ReceivedMessage): Promise<string> {
  const { parsed } = m;
  const attachments: InboundAttachmentMeta[] = parsed.attachments.map((a, position) => ({
    position,
    filename: a.filename ?? null,
    content_type: a.contentType,
    content_id: a.cid ? a.cid.replace(/^<|>$/g, '') : null,
    disposition: a.contentDisposition ?? null,
    size: a.content.length,
    checksum: createHash('sha256').update(a.content).digest('hex'),
  }));
  const headers = headerPairs(parsed);
  const from = parsed.from?.value[0];
  return ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .insertInto('inbound_messages')
      .values({
        project_id: m.projectId,
        mail_from: m.envelope.mailFrom,
        rcpt_to: m.envelope.rcptTo,
        remote_ip: m.envelope.remoteIp,
        helo: m.envelope.helo,
        from_header: parsed.from?.text ?? null,
        from_address: from?.address ?? null,
        to_addresses: addressList(parsed.to),
        cc_addresses: addressList(parsed.cc),
        reply_to: addressList(parsed.replyTo),
        subject: parsed.subject ?? null,
        message_id: parsed.messageId ?? null,
        sent_at: parsed.date && !Number.isNaN(parsed.date.getTime()) ? parsed.date : null,
        text_body: parsed.text ?? null,
        html: typeof parsed.html === 'string' ? parsed.html : null,
        headers: JSON.stringify(headers),
        auth: JSON.stringify(m.auth),
        spam: JSON.stringify(spamFlags(m.auth, parsed)),
        attachments: JSON.stringify(attachments),
        size_bytes: m.raw.length,
        raw: m.raw,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (parsed.attachments.length > 0) {
      await tx
        .insertInto('inbound_attachments')
        .values(
          parsed.attachments.map((a, position) => ({ inbound_id: row.id, position, content: a.content })),
        )
        .execute();
    }
    if ((await projectsWithWebhooks(tx, [m.projectId])).size > 0)
      await enqueue(tx, [{ task: 'webhook_dispatch', payload: { inbound_id: row.id } }]);
    return row.id;
  });
}

function presentSummary(row: Omit<InboundRow, 'raw' | 'raw_pruned_at' | 'headers' | 'text_body' | 'html'>) {
  return {
    id: row.id,
    object: 'inbound_email' as const,
    from: row.from_header,
    from_address: row.from_address,
    to: row.to_addresses,
    cc: row.cc_addresses,
    reply_to: row.reply_to,
    subject: row.subject,
    message_id: row.message_id,
    envelope: { mail_from: row.mail_from, rcpt_to: row.rcpt_to, remote_ip: row.remote_ip, helo: row.helo },
    attachments: row.attachments,
    auth: row.auth,
    spam: row.spam,
    size_bytes: row.size_bytes,
    sent_at: row.sent_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

const SUMMARY_COLUMNS = [
  'id',
  'project_id',
  'mail_from',
  'rcpt_to',
  'remote_ip',
  'helo',
  'from_header',
  'from_address',
  'to_addresses',
  'cc_addresses',
  'reply_to',
  'subject',
  'message_id',
  'sent_at',
  'auth',
  'spam',
  'attachments',
  'size_bytes',
  'created_at',
] as const;

/** GET /inbound: newest first, paginated. */
export async function listInbound(
  ctx: DomainContext,
  project: Reader,
  query: { limit: number; offset: number; from?: string; to?: string },
) {
  requireInboundPlan(project.plan);
  const projectId = project.id;
  let base = ctx.db.selectFrom('inbound_messages').where('project_id', '=', projectId);
  if (query.from) base = base.where('from_address', 'ilike', query.from.replace(/[\\%_]/g, '\\$&'));
  if (query.to) base = base.where(({ eb }) => eb(eb.val(query.to?.toLowerCase()), '=', eb.fn.any('rcpt_to')));
  const [rows, count] = await Promise.all([
    base
      .select(SUMMARY_COLUMNS)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(presentSummary), total: Number(count.n), limit: query.limit, offset: query.offset };
}

/** Received messages as GET /inbound lists them, in the order of `ids` (the Resend door's pages). */
export async function inboundSummaries(ctx: Pick<DomainContext, 'db'>, project: Reader, ids: string[]) {
  requireInboundPlan(project.plan);
  if (ids.length === 0) return [];
  const rows = await ctx.db
    .selectFrom('inbound_messages')
    .select(SUMMARY_COLUMNS)
    .where('project_id', '=', project.id)
    .where('id', 'in', ids)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, presentSummary(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

async function findInbound(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  return findInProject(ctx.db, 'inbound_messages', 'Inbound email', projectId, id, [
    ...SUMMARY_COLUMNS,
    'headers',
    'text_body',
    'html',
  ]);
}

/** GET /inbound/{id}: the message, for a project whose plan includes inbound. */
export async function readInbound(ctx: Pick<DomainContext, 'db'>, project: Reader, id: string) {
  requireInboundPlan(project.plan);
  return getInbound(ctx, project.id, id);
}

/**
 * A received message as the API and the `email.received` webhook show it: headers, addresses,
 * bodies, attachment metadata, authentication results, spam flags.
 */
export async function getInbound(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const row = await findInbound(ctx, projectId, id);
  return {
    ...presentSummary(row),
    headers: row.headers.map(([name, value]) => ({ name, value })),
    text: row.text_body,
    html: row.html,
  };
}

/**
 * GET /inbound/{id}/raw: the message exactly as received; 409 once retention removed the source
 * (POSTHORN_RETENTION_INBOUND_RAW_DAYS), while the parsed message stays readable.
 */
export async function inboundRaw(
  ctx: Pick<DomainContext, 'db'>,
  project: Reader,
  id: string,
): Promise<Buffer> {
  requireInboundPlan(project.plan);
  const row = await findInProject(ctx.db, 'inbound_messages', 'Inbound email', project.id, id, [
    'raw',
    'raw_pruned_at',
  ]);
  if (row.raw_pruned_at)
    throw new ConflictError(
      `The raw source of this message was removed on ${row.raw_pruned_at.toISOString()} by the retention period (POSTHORN_RETENTION_INBOUND_RAW_DAYS); its parsed form is still at GET /v1/inbound/${id}`,
    );
  return row.raw;
}

/** One attachment's bytes and metadata, by its position in the message (0-based). */
export async function inboundAttachment(
  ctx: Pick<DomainContext, 'db'>,
  project: Reader,
  id: string,
  position: number,
) {
  requireInboundPlan(project.plan);
  const row = await findInbound(ctx, project.id, id);
  const meta = row.attachments.find((a) => a.position === position);
  if (!meta) throw new NotFoundError('Attachment');
  const content = await ctx.db
    .selectFrom('inbound_attachments')
    .select('content')
    .where('inbound_id', '=', id)
    .where('position', '=', meta.position)
    .executeTakeFirstOrThrow();
  return { meta, content: content.content };
}
