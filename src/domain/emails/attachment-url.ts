import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { ValidationError } from '../core/errors.ts';
import { pinnedLookup, resolveTarget, type TargetPolicy } from '../webhooks/target.ts';
import { MAX_MESSAGE_BYTES } from './validate.ts';

/**
 * Attachments given by `path` (a URL, as Resend takes them, issue 35), fetched before the message
 * is checked: the address is judged as a webhook's (public only, unless the operator allows
 * private targets) and the connection goes to the address judged, redirects are not followed,
 * at most 10 s and the message's 40 MB. The file becomes the attachment's `content`; its name
 * and type come from the URL and the answer when not given.
 */

const FETCH_TIMEOUT_MS = 10_000;

interface WithPath {
  path?: string;
  content?: string;
  filename?: string;
  content_type?: string;
}

function fetchOnce(
  url: URL,
  addresses: LookupAddress[],
  field: string,
  timeoutMs: number,
): Promise<{ body: Buffer; type: string | null }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new ValidationError(`${field}: ${url.href.slice(0, 200)} ${why}`));
    const request = client.get(
      url,
      {
        headers: { 'user-agent': 'Posthorn-Attachments/1' },
        timeout: timeoutMs,
        lookup: pinnedLookup(addresses),
      },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          const status = response.statusCode ?? 0;
          return fail(
            status >= 300 && status < 400
              ? `answered a redirect (${status}), which is not followed`
              : `answered ${status}`,
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_MESSAGE_BYTES) {
            response.destroy();
            return fail('is larger than the 40 MB a message may be');
          }
          chunks.push(c);
        });
        // cut off (the deadline, the size): the request's error says why, this only ends the wait
        response.on('error', () => {});
        response.on('aborted', () => fail('stopped answering before the whole file came'));
        response.on('end', () =>
          resolve({
            body: Buffer.concat(chunks),
            type: response.headers['content-type']?.split(';')[0].trim() ?? null,
          }),
        );
      },
    );
    // a deadline for the whole file: the socket's timeout alone restarts with every byte of a slow answer
    const timedOut = () => {
      fail(`took longer than ${timeoutMs / 1000} s`);
      request.destroy();
    };
    const deadline = setTimeout(timedOut, timeoutMs);
    request.on('timeout', timedOut);
    request.on('error', (err) => fail(`could not be fetched: ${err.message}`));
    request.on('close', () => clearTimeout(deadline));
  });
}

async function fetchAttachment(
  a: WithPath,
  field: string,
  policy: TargetPolicy,
  timeoutMs: number,
): Promise<WithPath> {
  let url: URL;
  try {
    url = new URL(String(a.path));
  } catch {
    throw new ValidationError(`${field} must be a URL (got "${String(a.path).slice(0, 100)}")`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowPrivate))
    throw new ValidationError(`${field} must use https (got ${url.protocol.replace(':', '')})`);
  if (url.username || url.password)
    throw new ValidationError(`${field} must not contain a user name or password`);
  const addresses = await resolveTarget(url, policy, {
    field,
    rule: 'attachments are fetched from public addresses only',
  });
  const { body, type } = await fetchOnce(url, addresses, field, timeoutMs);
  const { path: _path, ...rest } = a;
  const last = url.pathname.split('/').pop() ?? '';
  let named: string;
  try {
    named = decodeURIComponent(last) || 'attachment';
  } catch {
    named = last; // a broken %-escape: the name as written
  }
  return {
    ...rest,
    content: body.toString('base64'),
    filename: a.filename ?? named,
    ...((a.content_type ?? (type && /^[\w.+-]+\/[\w.+-]+$/.test(type)))
      ? { content_type: a.content_type ?? (type as string) }
      : {}),
  };
}

/** Messages whose attachments given by `path` are fetched (the rest as they were). */
export async function fetchAttachmentPaths<T extends { attachments?: WithPath[] }>(
  policy: TargetPolicy,
  messages: T[],
  { timeoutMs = FETCH_TIMEOUT_MS }: { timeoutMs?: number } = {},
): Promise<T[]> {
  if (!messages.some((m) => m.attachments?.some((a) => a.path !== undefined && a.content === undefined)))
    return messages;
  return Promise.all(
    messages.map(async (m, i) => {
      if (!m.attachments) return m;
      const attachments = await Promise.all(
        m.attachments.map((a, j) => {
          if (a.path === undefined || a.content !== undefined) return a;
          const at = messages.length > 1 ? `\`[${i}].attachments[${j}].path\`` : `\`attachments[${j}].path\``;
          return fetchAttachment(a, at, policy, timeoutMs);
        }),
      );
      return { ...m, attachments };
    }),
  );
}
