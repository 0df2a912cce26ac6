import MailComposer from 'nodemailer/lib/mail-composer';
import { type DkimKey, signDkimAsync } from './dkim.ts';
import { canComposeFast, composeFast } from './fast-compose.ts';
import { htmlToText } from './html-to-text.ts';

export interface ComposeInput {
  messageId: string;
  from: string;
  to: string[];
  cc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: {
    filename: string | null;
    contentType: string | null;
    contentId: string | null;
    content: Buffer;
  }[];
  /** The sending project's id; `system` for the service's own mail, which belongs to no project. */
  projectId: string;
  stream: string;
  /** Internal tags (campaign, flow, step, variation) for Feedback-ID. */
  feedbackTags?: string[];
  date?: Date;
}

/**
 * Builds the exact bytes of a message (nodemailer's composer) with the headers every Posthorn message
 * carries, then signs it with DKIM. Bcc recipients are never written into the headers.
 */
export async function composeMessage(input: ComposeInput, dkim: DkimKey | null): Promise<Buffer> {
  if (canComposeFast(input)) {
    const raw = composeFast(input);
    return dkim ? signDkimAsync(raw, dkim) : raw;
  }
  const composer = new MailComposer({
    messageId: input.messageId,
    date: input.date ?? new Date(),
    from: input.from,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo.length ? input.replyTo : undefined,
    subject: input.subject,
    html: input.html ?? undefined,
    text: input.text ?? (input.html ? htmlToText(input.html) : undefined),
    headers: {
      ...input.headers,
      'X-Posthorn-Project': input.projectId,
      'X-Posthorn-Stream': input.stream,
      'Feedback-ID': [input.stream, ...(input.feedbackTags ?? []), input.projectId, 'posthorn'].join(':'),
    },
    attachments: input.attachments.map((a) => ({
      filename: a.filename ?? undefined,
      content: a.content,
      contentType: a.contentType ?? undefined,
      cid: a.contentId ?? undefined,
      contentDisposition: a.contentId && !a.filename ? ('inline' as const) : undefined,
    })),
  });
  const raw = await composer.compile().build();
  return dkim ? signDkimAsync(raw, dkim) : raw;
}
