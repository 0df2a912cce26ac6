/**
 * The routes file (POSTHORN_ROUTES): named ways out and the ordered rules that choose among them.
 * Pure: `parseRoutes` takes the parsed JSON and returns the typed routes, or throws a RoutesError
 * listing every problem, each naming its key path (`routes.relay.url: must be smtp:// or smtps://`).
 */

export const STREAMS = ['transactional', 'marketing', 'automation'] as const;
export type Stream = (typeof STREAMS)[number];

/** The dialect a relay's provider tags are written in (issue 31 item 3; not written yet). */
export const TAG_DIALECTS = ['ses', 'mailgun', 'postmark', 'sendgrid', 'none'] as const;
export type TagDialect = (typeof TAG_DIALECTS)[number];

export interface SmtpRoute {
  type: 'smtp';
  /** `smtp://user:pass@host:port` or `smtps://`, as POSTHORN_SMTP_RELAY. */
  url: string;
  /** Connections each worker process keeps to the relay. */
  poolSize: number;
  /** Seconds the relay may stay silent before the attempt is deferred. */
  timeoutSeconds: number;
  /** Checked, not enforced yet (issue 31 item 7). */
  ratePerSecond: number | null;
  /** Checked, not written yet (issue 31 item 3). */
  tags: TagDialect;
}

export interface MailboxRoute {
  type: 'mailbox';
}

export type Route = SmtpRoute | MailboxRoute;

/** What a rule looks at; an absent key matches anything, so `{}` matches every message. */
export interface RouteMatch {
  stream?: Stream;
  projectId?: string;
  /** The sending domain (of the From address), lower-cased. */
  domain?: string;
  /** The recipient's domain, lower-cased. */
  recipientDomain?: string;
}

export interface RouteRule {
  match: RouteMatch;
  /** Route names in order of preference; only the first is used for now (failover comes later). */
  routes: string[];
}

export interface RoutesConfig {
  routes: Map<string, Route>;
  rules: RouteRule[];
}

export class RoutesError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_TIMEOUT_SECONDS = 60;

/** Without POSTHORN_ROUTES: one route named `default`, the relay when one is set, else the dev mailbox. */
export function defaultRoutes(relay: string | undefined, timeoutSeconds: number): RoutesConfig {
  const route: Route = relay
    ? {
        type: 'smtp',
        url: relay,
        poolSize: DEFAULT_POOL_SIZE,
        timeoutSeconds,
        ratePerSecond: null,
        tags: 'none',
      }
    : { type: 'mailbox' };
  return { routes: new Map([['default', route]]), rules: [{ match: {}, routes: ['default'] }] };
}

const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Collects problems while the file is read, each with its key path. */
class Checker {
  readonly problems: string[] = [];
  problem(at: string, what: string) {
    this.problems.push(`${at}: ${what}`);
  }
  /** Reports every key of `value` that is not in `known`. */
  known(at: string, value: Obj, known: readonly string[]) {
    for (const key of Object.keys(value))
      if (!known.includes(key))
        this.problem(at ? `${at}.${key}` : key, `unknown key (expected one of ${known.join(', ')})`);
  }
  string(at: string, value: unknown, optional = false): string | undefined {
    if (value === undefined && optional) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      this.problem(at, value === undefined ? 'is required' : 'must be a non-empty string');
      return undefined;
    }
    return value.trim();
  }
  integer(at: string, value: unknown, fallback: number, min: number, max: number): number {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      this.problem(at, `must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }
  oneOf<T extends string>(at: string, value: unknown, allowed: readonly T[]): T | undefined {
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    this.problem(at, `must be one of ${allowed.join(', ')}`);
    return undefined;
  }
}

function smtpRoute(c: Checker, at: string, value: Obj): SmtpRoute {
  c.known(at, value, ['type', 'url', 'pool_size', 'timeout_seconds', 'rate_per_second', 'tags']);
  const url = c.string(`${at}.url`, value.url) ?? '';
  if (url) {
    try {
      const parsed = new URL(url);
      if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') throw new Error('protocol');
      if (!parsed.hostname) throw new Error('host');
    } catch {
      c.problem(`${at}.url`, 'must be smtp:// or smtps:// with a host, like smtp://user:pass@host:587');
    }
  }
  let ratePerSecond: number | null = null;
  if (value.rate_per_second !== undefined) {
    const rate = value.rate_per_second;
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > 1_000_000)
      c.problem(`${at}.rate_per_second`, 'must be a number of messages per second above 0');
    else ratePerSecond = rate;
  }
  return {
    type: 'smtp',
    url,
    poolSize: c.integer(`${at}.pool_size`, value.pool_size, DEFAULT_POOL_SIZE, 1, 1000),
    timeoutSeconds: c.integer(
      `${at}.timeout_seconds`,
      value.timeout_seconds,
      DEFAULT_TIMEOUT_SECONDS,
      1,
      3600,
    ),
    ratePerSecond,
    tags: value.tags === undefined ? 'none' : (c.oneOf(`${at}.tags`, value.tags, TAG_DIALECTS) ?? 'none'),
  };
}

/** SES is recognised with its keys, then refused: it comes with a later increment of issue 31. */
function sesRoute(c: Checker, at: string, value: Obj) {
  c.known(at, value, [
    'type',
    'region',
    'access_key_id',
    'secret_access_key',
    'endpoint',
    'configuration_set',
  ]);
  c.string(`${at}.region`, value.region);
  c.string(`${at}.access_key_id`, value.access_key_id);
  c.string(`${at}.secret_access_key`, value.secret_access_key);
  const endpoint = c.string(`${at}.endpoint`, value.endpoint, true);
  if (endpoint && !/^https?:\/\/[^/]/.test(endpoint)) c.problem(`${at}.endpoint`, 'must be an http(s) URL');
  c.string(`${at}.configuration_set`, value.configuration_set, true);
  c.problem(at, 'the "ses" route type is not available yet in this version (use "smtp" or "mailbox")');
}

function routesOf(c: Checker, value: unknown): Map<string, Route> {
  const routes = new Map<string, Route>();
  if (!isObject(value)) {
    c.problem('routes', value === undefined ? 'is required' : 'must be an object of route name to route');
    return routes;
  }
  if (Object.keys(value).length === 0) c.problem('routes', 'must name at least one route');
  for (const [name, route] of Object.entries(value)) {
    const at = `routes.${name}`;
    if (!ROUTE_NAME.test(name))
      c.problem(
        at,
        'a route name is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit',
      );
    if (!isObject(route)) {
      c.problem(at, 'must be an object with a "type"');
      continue;
    }
    const type = c.oneOf(`${at}.type`, route.type, ['smtp', 'ses', 'mailbox'] as const);
    if (type === 'smtp') routes.set(name, smtpRoute(c, at, route));
    else if (type === 'ses') sesRoute(c, at, route);
    else if (type === 'mailbox') {
      c.known(at, route, ['type']);
      routes.set(name, { type: 'mailbox' });
    }
  }
  return routes;
}

function domainIn(c: Checker, at: string, value: unknown): string | undefined {
  const domain = c.string(at, value)?.toLowerCase();
  if (domain !== undefined && !DOMAIN.test(domain)) {
    c.problem(at, 'must be a domain name like example.org');
    return undefined;
  }
  return domain;
}

function matchOf(c: Checker, at: string, value: unknown): RouteMatch {
  const match: RouteMatch = {};
  if (!isObject(value)) {
    c.problem(at, value === undefined ? 'is required ({} matches every message)' : 'must be an object');
    return match;
  }
  c.known(at, value, ['stream', 'project_id', 'domain', 'recipient_domain']);
  if (value.stream !== undefined) match.stream = c.oneOf(`${at}.stream`, value.stream, STREAMS);
  if (value.project_id !== undefined) {
    const id = c.string(`${at}.project_id`, value.project_id)?.toLowerCase();
    if (id !== undefined && !UUID.test(id)) c.problem(`${at}.project_id`, 'must be a project id (a UUID)');
    else match.projectId = id;
  }
  if (value.domain !== undefined) match.domain = domainIn(c, `${at}.domain`, value.domain);
  if (value.recipient_domain !== undefined)
    match.recipientDomain = domainIn(c, `${at}.recipient_domain`, value.recipient_domain);
  return match;
}

function rulesOf(c: Checker, value: unknown, names: Set<string>): RouteRule[] {
  if (!Array.isArray(value) || value.length === 0) {
    c.problem('rules', value === undefined ? 'is required' : 'must be a non-empty list of rules');
    return [];
  }
  const rules = value.map((rule, i): RouteRule => {
    const at = `rules[${i}]`;
    if (!isObject(rule)) {
      c.problem(at, 'must be an object with "match" and "routes"');
      return { match: {}, routes: [] };
    }
    c.known(at, rule, ['match', 'routes']);
    const match = matchOf(c, `${at}.match`, rule.match);
    const routes: string[] = [];
    if (!Array.isArray(rule.routes) || rule.routes.length === 0)
      c.problem(`${at}.routes`, 'must be a non-empty list of route names');
    else
      rule.routes.forEach((name, j) => {
        if (typeof name !== 'string') c.problem(`${at}.routes[${j}]`, 'must be a route name');
        else if (!names.has(name)) c.problem(`${at}.routes[${j}]`, `no route named ${JSON.stringify(name)}`);
        else if (routes.includes(name))
          c.problem(`${at}.routes[${j}]`, `route ${JSON.stringify(name)} is listed twice`);
        else routes.push(name);
      });
    return { match, routes };
  });
  const last = value[value.length - 1];
  if (isObject(last) && !(isObject(last.match) && Object.keys(last.match).length === 0))
    c.problem(
      `rules[${value.length - 1}].match`,
      'the last rule must match every message ("match": {}), so that no message is left without a route',
    );
  return rules;
}

/** The routes file's JSON, checked: every problem is reported at once, each with its key path. */
export function parseRoutes(json: unknown): RoutesConfig {
  const c = new Checker();
  if (!isObject(json)) throw new RoutesError(['the file must hold an object with "routes" and "rules"']);
  c.known('', json, ['routes', 'rules']);
  const routes = routesOf(c, json.routes);
  // a rule naming an SES route (refused above) is not also reported as naming no route
  const declared = new Set(isObject(json.routes) ? Object.keys(json.routes) : []);
  const rules = rulesOf(c, json.rules, declared);
  if (c.problems.length > 0) throw new RoutesError(c.problems);
  return { routes, rules };
}
