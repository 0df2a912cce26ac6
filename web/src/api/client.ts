/**
 * The one way the screens reach the server: the same `/v1` API every client uses, with the
 * dashboard session cookie as the credential, plus the dashboard-only `/api`. Writes carry the
 * session's anti-forgery token; `/v1` calls name their project with `X-Project-Id`.
 */
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

export interface RequestOptions {
  body?: unknown;
  /** The project a `/v1` call acts in. */
  projectId?: string;
  query?: Record<string, string | number | undefined>;
}

function urlOf(path: string, query: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

function messageOf(status: number, body: unknown): string {
  if (body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string')
    return (body as { error: string }).error;
  if (status >= 500) return 'The server could not answer. Try again in a moment.';
  return `The request failed (${status}).`;
}

/** Calls the server; JSON in, JSON out; a non-2xx answer throws an ApiError with the server's message. */
export async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  if (opts.projectId) headers['x-project-id'] = opts.projectId;
  let res: Response;
  try {
    res = await fetch(urlOf(path, opts.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch {
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.', null);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (!res.ok) throw new ApiError(res.status, messageOf(res.status, body), body);
  return body as T;
}

/** A `/v1` call in a project. */
export function v1<T>(
  method: string,
  projectId: string,
  path: string,
  opts: Omit<RequestOptions, 'projectId'> = {},
) {
  return request<T>(method, `/v1${path}`, { ...opts, projectId });
}

/** A call to the dashboard-only API at `{app_url}/api`. */
export function dashboardApi<T>(method: string, path: string, body?: unknown) {
  return request<T>(method, `/api${path}`, { body });
}

/** The message to show for any failure. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return 'Something went wrong.';
}
