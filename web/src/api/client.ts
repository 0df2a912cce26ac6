import { queryOptions, type UseQueryOptions } from '@tanstack/react-query';
import type { components, paths } from './openapi.d.ts';
import { inPeoplesWords } from './words.ts';

/**
 * The one way the screens reach the server: the same `/v1` API every client uses, with the
 * dashboard session cookie as the credential, plus the dashboard-only `/api`. Every call is typed
 * by the OpenAPI document (openapi.d.ts, generated from the route schemas at build): its path,
 * parameters, body and answer. Writes carry the session's anti-forgery token; `/v1` calls name
 * their project with `X-Project-Id`.
 */

/** The resource shapes, as GET /v1/openapi.json names them. */
export type Schemas = components['schemas'];

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

let csrfToken: string | null = null;

/** Remembers the session's anti-forgery token (from GET /api/session) for every later write. */
export function setCsrfToken(token: string | null) {
  csrfToken = token;
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
/** The documented paths that answer a method. */
type PathOf<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends undefined ? never : P;
}[keyof paths];

type Parameters<O> = O extends { parameters: infer P } ? P : never;
type Part<O, K extends string> = Parameters<O> extends { [key in K]?: infer X } ? X : never;
type Defined<T> = [Exclude<T, undefined>] extends [never] ? false : true;
type RequestBody<O> = O extends { requestBody?: infer B } ? NonNullable<B> : never;
type JsonBody<O> = [RequestBody<O>] extends [never]
  ? never
  : RequestBody<O> extends { content: { 'application/json': infer B } }
    ? B
    : never;
type ProjectHeader<O> = [NonNullable<Part<O, 'header'>>] extends [never]
  ? false
  : 'X-Project-Id' extends keyof NonNullable<Part<O, 'header'>>
    ? true
    : false;

/** What a call takes besides its path: each part only where the operation has it. */
export type CallOptions<O> = (ProjectHeader<O> extends true
  ? { /** The project the call acts in (X-Project-Id). */ project: string }
  : { project?: never }) &
  (Defined<Part<O, 'path'>> extends true ? { path: Exclude<Part<O, 'path'>, undefined> } : { path?: never }) &
  (Defined<Part<O, 'query'>> extends true
    ? { query?: Exclude<Part<O, 'query'>, undefined> }
    : { query?: never }) &
  ([JsonBody<O>] extends [never] ? { body?: never } : { body: JsonBody<O> });

type Success<O> = O extends { responses: infer R } ? R[Extract<keyof R, 200 | 201 | 202 | 204>] : never;
/** The answer of a call: its JSON, the text of a text answer, or null for 204. */
export type Answer<O> =
  Success<O> extends { content: { 'application/json': infer T } }
    ? T
    : Success<O> extends { content: Record<string, unknown> }
      ? string
      : null;

type Args<O> =
  Partial<CallOptions<O>> extends CallOptions<O> ? [options?: CallOptions<O>] : [options: CallOptions<O>];

function urlOf(path: string, options: { path?: object; query?: object }): string {
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(String((options.path as Record<string, unknown>)[name])),
  );
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(options.query ?? {}))
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${url}?${qs}` : url;
}

function messageOf(status: number, body: unknown, what?: string): string {
  if (body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string')
    return (body as { error: string }).error;
  if (what) return `The ${what} failed (${status}).`;
  if (status >= 500) return 'The server could not answer. Try again in a moment.';
  return `The request failed (${status}).`;
}

const UNREACHABLE = 'The server cannot be reached. Check your connection and try again.';

/**
 * Sends a request; a non-2xx answer throws an ApiError with the server's message (else "The
 * `what` failed", when given).
 */
export async function send(
  method: string,
  url: string,
  options: { project?: string; body?: unknown; file?: { content: Blob; type: string }; what?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.file) headers['content-type'] = options.file.type;
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  if (options.project) headers['x-project-id'] = options.project;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: options.file
        ? options.file.content
        : options.body === undefined
          ? undefined
          : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiError(0, UNREACHABLE, null);
  }
  if (!res.ok) {
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {}
    throw new ApiError(res.status, messageOf(res.status, body, options.what), body);
  }
  return res;
}

async function call(method: Method, path: string, options: Record<string, unknown> = {}): Promise<unknown> {
  const res = await send(method.toUpperCase(), urlOf(path, options), options);
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('json')) return text || null;
  return text ? JSON.parse(text) : null;
}

const caller =
  <M extends Method>(method: M) =>
  <P extends PathOf<M>>(path: P, ...[options]: Args<Operation<P, M>>) =>
    call(method, path, options) as Promise<Answer<Operation<P, M>>>;

/** The API, by method and documented path: `api.get('/v1/emails/{id}', { project, path: { id } })`. */
export const api = {
  get: caller('get'),
  post: caller('post'),
  put: caller('put'),
  patch: caller('patch'),
  delete: caller('delete'),
};

/** The paths that take a CSV file as their body. */
type CsvPath = {
  [P in PathOf<'post'>]: RequestBody<Operation<P, 'post'>> extends { content: { 'text/csv': unknown } }
    ? P
    : never;
}[PathOf<'post'>];

/** Sends a CSV file as it is (not JSON) to an operation that takes `text/csv`; the answer is typed as `api.post`'s. */
export async function postCsv<P extends CsvPath>(
  path: P,
  options: { project: string; file: Blob },
): Promise<Answer<Operation<P, 'post'>>> {
  const res = await send('POST', path, {
    project: options.project,
    file: { content: options.file, type: 'text/csv' },
  });
  return res.json();
}

type QueryExtras<T> = Omit<UseQueryOptions<T, Error, T, readonly unknown[]>, 'queryKey' | 'queryFn'>;

/**
 * A query of one project's data. Its key starts with the project (`['project', id, ...key]`), so
 * one project's answers never show in another, and a change can refresh everything of a kind.
 */
export function projectQuery<T>(
  project: string,
  key: readonly unknown[],
  queryFn: () => Promise<T>,
  extras: QueryExtras<T> = {},
) {
  return queryOptions<T, Error, T, readonly unknown[]>({
    ...extras,
    queryKey: ['project', project, ...key],
    queryFn,
  });
}

/**
 * The message to show for any failure, in the dashboard's words (words.ts): an ApiError's message
 * stays the API's own, for the screens that read a field or a line in it.
 */
export function errorText(err: unknown): string {
  if (err instanceof Error) return inPeoplesWords(err.message);
  return 'Something went wrong.';
}
