/**
 * A small typed client of the Posthorn API, shared by the command-line tool and (later) the MCP
 * server, so no endpoint path or payload is written twice. `baseUrl` includes `/v1`.
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

export interface SignupResult {
  account: { id: string; email: string; name: string; email_confirmed: boolean };
  workspace: { id: string; name: string };
  project: { id: string; name: string };
  project_key: { id: string; key: string; name: string };
  account_key: { id: string; key: string; name: string };
}

export interface Me {
  project: { id: string; name: string; object: 'project' };
  sending: {
    ready: boolean;
    email_confirmed: boolean;
    verified_domains: string[];
    default_from: string;
    note: string;
  };
  footer: { address: string; is_your_own_address: boolean };
  inbound: { domain: string; address: string };
}

export interface ProjectSummary {
  id: string;
  name: string;
  workspace_id: string;
  role?: string;
}

export class PosthornClient {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  /** The project the project API acts in (`X-Project-Id`), for a key that reaches several. */
  readonly projectId: string | undefined;

  constructor(opts: { baseUrl: string; apiKey?: string; projectId?: string }) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.apiKey = opts.apiKey;
    this.projectId = opts.projectId || undefined;
  }

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
          ...(this.projectId ? { 'x-project-id': this.projectId } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiError(0, `cannot reach ${this.baseUrl}: ${(err as Error).message}`, null);
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    if (!res.ok) {
      const message =
        parsed && typeof parsed === 'object' && 'error' in parsed
          ? String((parsed as { error: unknown }).error)
          : `HTTP ${res.status}`;
      throw new ApiError(res.status, message, parsed);
    }
    return parsed as T;
  }

  signup(input: { email: string; name: string; accept_terms: boolean }) {
    return this.request<SignupResult>('POST', '/signup', input);
  }
  verifyEmail(code: string) {
    return this.request<{ email_confirmed: boolean }>('POST', '/auth/verify-email/code', { code });
  }
  me() {
    return this.request<Me>('GET', '/me');
  }
  workspaces() {
    return this.request<{ data: { id: string; name: string; plan: string; role?: string }[] }>(
      'GET',
      '/workspaces',
    );
  }
  /** The projects of the account with the caller's role (an all-access key; a project key is 403). */
  projects() {
    return this.request<{ data: ProjectSummary[] }>('GET', '/projects');
  }
  revokeKey(id: string) {
    return this.request<void>('DELETE', `/api-keys/${encodeURIComponent(id)}`);
  }
  startPairing(deviceName: string) {
    return this.request<{
      code: string;
      verification_url: string;
      poll_token: string;
      expires_at: string;
      interval: number;
    }>('POST', '/auth/pairings', { device_name: deviceName });
  }
  pollPairing(pollToken: string) {
    return this.request<{
      status: 'pending' | 'authorized' | 'expired' | 'denied';
      key?: string;
      key_id?: string | null;
    }>('GET', `/auth/pairings/${encodeURIComponent(pollToken)}`);
  }
  listDomains<T = { data: { id: string; name: string; status: string }[] }>() {
    return this.request<T>('GET', '/domains');
  }
  addDomain<T = Record<string, unknown>>(domain: string) {
    return this.request<T>('POST', '/domains', { domain });
  }
  checkDomain<T = Record<string, unknown>>(id: string) {
    return this.request<T>('POST', `/domains/${encodeURIComponent(id)}/check`);
  }
  listKeys<T = Record<string, unknown>>(projectId: string) {
    return this.request<T>('GET', `/projects/${encodeURIComponent(projectId)}/api-keys`);
  }
  createKey<T = Record<string, unknown>>(
    projectId: string,
    input: { name: string; expires_in_days?: number },
  ) {
    return this.request<T>('POST', `/projects/${encodeURIComponent(projectId)}/api-keys`, input);
  }
  rotateKey<T = Record<string, unknown>>(id: string) {
    return this.request<T>('POST', `/api-keys/${encodeURIComponent(id)}/rotate`);
  }
  createContact(input: Record<string, unknown>) {
    return this.request<Record<string, unknown>>('POST', '/contacts', input);
  }
  trackEvent(input: Record<string, unknown>) {
    return this.request<Record<string, unknown>>('POST', '/events', input);
  }
  sendEmail(input: Record<string, unknown>) {
    return this.request<{ id: string; status: string; warnings?: string[] }>('POST', '/emails', input);
  }
  listEmails(query: Record<string, string | number | undefined> = {}) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) params.set(name, String(value));
    const search = params.size ? `?${params}` : '';
    return this.request<{ data: Record<string, unknown>[]; total: number }>('GET', `/emails${search}`);
  }
  getEmail(id: string) {
    return this.request<Record<string, unknown>>('GET', `/emails/${encodeURIComponent(id)}`);
  }
}
