import { parseMail } from '../../mail/parsed.ts';
import { selectProject } from '../accounts/project-selection.ts';
import type { DomainContext } from '../core/context.ts';
import { AuthenticationError, NotFoundError, ValidationError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { type AuthenticatedKey, authenticateKey } from '../keys/service.ts';
import { type ProjectFacts, projectFacts } from '../plans/project-facts.ts';
import { type AcceptedEmail, acceptEmails } from './accept.ts';
import { emailInputFromMime } from './from-mime.ts';

/** Who sends over SMTP submission: the key and the facts of the project it sends for. */
export interface SubmissionSender {
  key: AuthenticatedKey;
  facts: ProjectFacts;
}

/**
 * Who a username/password pair is: the key (checked in the database on every call, so a revoked,
 * expired or rotated-away key fails at once) and the project it sends for. With an all-access key
 * the username must be the project id (spec 5.4).
 */
export async function submissionSender(
  ctx: DomainContext,
  username: string,
  password: string,
): Promise<SubmissionSender> {
  const { key, project } = await authenticateKey(ctx, password);
  if (key.scope === 'project') return { key, facts: project as ProjectFacts };
  if (!isUuid(username)) {
    throw new AuthenticationError(
      'With an all-access key the SMTP username must be the id of the project to send for',
    );
  }
  try {
    const projectId = await selectProject(ctx, key, username);
    return { key, facts: await projectFacts(ctx, projectId) };
  } catch (err) {
    if (err instanceof NotFoundError || err instanceof ValidationError) {
      throw new AuthenticationError(`No project ${username} that this key's user administers`);
    }
    throw err;
  }
}

/**
 * The trace header of a submitted message (RFC 5321 4.4): this server, the protocol (ESMTPSA: AUTH
 * over TLS, RFC 3848), the email id and the time. No `from` clause: the client's address and the
 * name it gave in EHLO are not passed on to the recipients.
 */
export function receivedHeader(host: string, emailId: string, overTls: boolean, at: Date): string {
  const date = at.toUTCString().replace(/GMT$/, '+0000');
  return `by ${host} (Posthorn) with ${overTls ? 'ESMTPSA' : 'ESMTPA'} id ${emailId}; ${date}`;
}

/**
 * Accepts a message submitted over SMTP through the one send path (stream transactional): parsed,
 * turned into the input of `acceptEmails` (the envelope decides who receives it) and stamped with
 * this server's Received header.
 */
export async function acceptSubmittedMessage(
  ctx: DomainContext,
  sender: SubmissionSender,
  message: { raw: Buffer; recipients: string[]; overTls: boolean },
): Promise<AcceptedEmail | undefined> {
  // the send path derives the text part itself: skip mailparser's conversions
  const parsed = await parseMail(message.raw, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
  });
  const result = await acceptEmails(
    ctx,
    {
      facts: sender.facts,
      apiKeyId: sender.key.id,
      stream: 'transactional',
      traceHeader: (id) => receivedHeader(ctx.config.smtpHost, id, message.overTls, new Date()),
    },
    [emailInputFromMime(parsed, message.recipients)],
    { batch: false },
  );
  return result.emails[0];
}
