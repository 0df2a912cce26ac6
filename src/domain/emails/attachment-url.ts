import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { ValidationError } from '../core/errors.ts';
import { pinnedLookup, resolveTarget, type TargetPolicy } from '../webhooks/target.ts';
import { FETCH_DEADLINE_MS, type MessageTally, processSlots, RequestFetching } from './attachment-limits.ts';

/**
 * Attachments given by `path` (a URL, as Resend takes them, issue 35), fetched before the message
 * is checked: the address is judged as a webhook's (public only, unless the operator allows
 * private targets) and the connection goes to the address judged, redirects are not followed.
 * The file becomes the attachment's `content`; its name and type come from the URL and the answer
 * when not given. How much a request may fetch, how many at once and for how long:
 * attachment-limits.ts.
 */

interface WithPath {
  path?: string;
  content?: string;
  filename?: string;
  content_type?: string;
}

interface Fetchable {
  html?: string;
  text?: string;
  attachments?: WithPath[];
}

const needsFetch = (a: WithPath) => a.path !== undefined && a.content === undefined;
const needsAny = (m: Fetchable) => m.attachments?.some(needsFetch) ?? false;

/** A refusal naming the file: its field, its URL and why. */
const refusal = (field: string, url: URL, why: string) =>
  new ValidationError(`${field}: ${url.href.slice(0, 200)} ${why}`);

/** The whole file, each chunk counted as it arrives (`count` says when it is one too many). */
function fetchOnce(
  url: URL,
  addresses: LookupAddress[],
  field: string,
  signal: AbortSignal,
  count: (bytes: number) => string | null,
): Promise<{ body: Buffer; type: string | null }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    let settled = false;
    const chunks: Buffer[] = [];
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      chunks.length = 0;
      reject(refusal(field, url, why));
    };
    const request = client.get(
      url,
      { headers: { 'user-agent': 'Posthorn-Attachments/1' }, lookup: pinnedLookup(addresses) },
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
        response.on('data', (c: Buffer) => {
          if (settled) return;
          const over = count(c.length);
          if (over === null) return void chunks.push(c);
          fail(over);
          request.destroy();
        });
        // cut off (the deadline, the size): the refusal says why, this only ends the wait
        response.on('error', () => {});
        response.on('aborted', () => fail('stopped answering before the whole file came'));
        response.on('end', () => {
          if (settled) return;
          settled = true;
          resolve({
            body: Buffer.concat(chunks),
            type: response.headers['content-type']?.split(';')[0].trim() ?? null,
          });
        });
      },
    );
    // the request's deadline, or its refusal, or another file of the message refused
    const cut = () => {
      fail(String(signal.reason));
      request.destroy();
    };
    if (signal.aborted) cut();
    else signal.addEventListener('abort', cut, { once: true });
    request.on('error', (err) => fail(`could not be fetched: ${err.message}`));
    request.on('close', () => signal.removeEventListener('abort', cut));
  });
}

/** The URL of `path`, if it is one Posthorn fetches from (https, no credentials). */
function checkedUrl(path: unknown, field: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(String(path));
  } catch {
    throw new ValidationError(`${field} must be a URL (got "${String(path).slice(0, 100)}")`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowPrivate))
    throw new ValidationError(`${field} must use https (got ${url.protocol.replace(':', '')})`);
  if (url.username || url.password)
    throw new ValidationError(`${field} must not contain a user name or password`);
  return url;
}

/** Waits for `promise` unless `signal` aborts first (a DNS answer has no way to be cut off). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const cut = () => reject(signal.reason);
    signal.addEventListener('abort', cut, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', cut));
  });
}

/** One file: a place in the request's and the process's fetches, then its address, then the file. */
async function fetchAttachment(
  a: WithPath,
  field: string,
  policy: TargetPolicy,
  request: RequestFetching,
  tally: MessageTally,
): Promise<WithPath> {
  const url = checkedUrl(a.path, field, policy);
  const signal = tally.abort.signal;
  const named = (why: unknown) => {
    throw why instanceof Error ? why : refusal(field, url, String(why));
  };
  const leaveRequest = await request.slots.take(signal).catch(named);
  try {
    const leaveProcess = await processSlots.take(signal).catch(named);
    try {
      const naming = { field, rule: 'attachments are fetched from public addresses only' };
      const addresses = await untilAborted(resolveTarget(url, policy, naming), signal).catch(named);
      const { body, type } = await fetchOnce(url, addresses, field, signal, (n) => request.count(tally, n));
      return asContent(a, url, body, type);
    } finally {
      leaveProcess();
    }
  } finally {
    leaveRequest();
  }
}

/** The attachment with the file as its base64 `content`, named and typed from the URL and answer. */
function asContent(a: WithPath, url: URL, body: Buffer, type: string | null): WithPath {
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

/** What a message is before its files (as validate.ts counts it, encoded): the files count on. */
function sizeBefore(m: Fetchable): number {
  const text = (v: unknown) => (typeof v === 'string' ? v.length : 0);
  const given = (m.attachments ?? []).reduce((sum, a) => sum + 500 + text(a.content), 0);
  return text(m.html) + text(m.text) * 2 + 2_000 + given;
}

/** One message's files, or the first refusal among them (its other fetches then cut off). */
async function fetchMessage<T extends Fetchable>(
  policy: TargetPolicy,
  request: RequestFetching,
  m: T,
  at: (j: number) => string,
): Promise<T> {
  const tally = request.tally(sizeBefore(m));
  try {
    const attachments = await Promise.all(
      (m.attachments ?? []).map((a, j) =>
        needsFetch(a) ? fetchAttachment(a, at(j), policy, request, tally) : a,
      ),
    );
    return { ...m, attachments };
  } finally {
    tally.abort.abort('was not fetched: another attachment of the message was refused');
  }
}

/**
 * Every message's files under one request's limits. `strict`: the first refusal refuses the
 * request (the other fetches cut off); otherwise each message gets its own, in its place. A
 * request past its budget is refused whole either way.
 */
async function fetchAll<T extends Fetchable>(
  policy: TargetPolicy,
  messages: T[],
  timeoutMs: number,
  strict: boolean,
): Promise<(T | ValidationError)[]> {
  const request = new RequestFetching(timeoutMs);
  // a permissive batch's refusals carry their message's index beside them
  const at = (i: number) => (j: number) =>
    strict && messages.length > 1 ? `\`[${i}].attachments[${j}].path\`` : `\`attachments[${j}].path\``;
  try {
    const outcomes = await Promise.all(
      messages.map((m, i) =>
        !needsAny(m)
          ? m
          : fetchMessage(policy, request, m, at(i)).catch((err: Error) => {
              if (strict || !(err instanceof ValidationError)) request.fail(err);
              return err as ValidationError;
            }),
      ),
    );
    if (request.failure) throw request.failure;
    return outcomes;
  } finally {
    request.end();
  }
}

/** Messages whose attachments given by `path` are fetched (the rest as they were); the first refusal refuses all. */
export async function fetchAttachmentPaths<T extends Fetchable>(
  policy: TargetPolicy,
  messages: T[],
  { timeoutMs = FETCH_DEADLINE_MS }: { timeoutMs?: number } = {},
): Promise<T[]> {
  if (!messages.some(needsAny)) return messages;
  // strict: any refusal was thrown
  return (await fetchAll(policy, messages, timeoutMs, true)) as T[];
}

/**
 * A permissive batch's messages, fetched as a strict batch's are (the same places, budget and
 * deadline): each message with its files, or the refusal of its own that names the file
 * (`attachments[j].path`: the batch gives its index beside it).
 */
export async function fetchEachAttachmentPaths<T extends Fetchable>(
  policy: TargetPolicy,
  messages: T[],
  { timeoutMs = FETCH_DEADLINE_MS }: { timeoutMs?: number } = {},
): Promise<(T | ValidationError)[]> {
  if (!messages.some(needsAny)) return messages;
  return fetchAll(policy, messages, timeoutMs, false);
}
