/**
 * The routes file (POSTHORN_ROUTES): named ways out and the ordered rules that choose among them.
 * Pure: `parseRoutes` takes the parsed JSON and returns the typed routes, or throws a RoutesError
 * listing every problem, each naming its key path (`routes.relay.url: must be smtp:// or smtps://`).
 */

import {
  Checker,
  configurationSetOf,
  healthOf,
  isObject,
  type Obj,
  rateOf,
  ratePerHourOf,
} from './checker.ts';
import { type DirectRoute, directRoute } from './direct-config.ts';
import { DEFAULT_HEALTH, type HealthSettings } from './health.ts';
import { type SimulatedRoute, simulatedRoute } from './simulated-config.ts';

export const STREAMS = ['transactional', 'marketing', 'automation'] as const;
export type Stream = (typeof STREAMS)[number];

/** The dialect a relay's provider tags are written in (routes/tags.ts). */
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
  /** Messages per second and per hour through the route, across worker processes (null: no limit). */
  ratePerSecond: number | null;
  ratePerHour: number | null;
  /** The dialect the message's provider tags are written in, as headers in front of the message. */
  tags: TagDialect;
  /** With `tags: "ses"`: the SES configuration set named in X-SES-CONFIGURATION-SET. */
  configurationSet?: string;
  /** When the relay is judged down (`unhealthy_after` failures in a row) and probed (`probe_seconds`). */
  health: HealthSettings;
}

/** Amazon SES through its v2 API (SendEmail with the raw, signed bytes). */
export interface SesRoute {
  type: 'ses';
  /** The AWS region, like eu-west-1. */
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Another API endpoint than the region's (tests: aws-ses-v2-local). */
  endpoint?: string;
  /** The configuration set named in each SendEmail (its event destinations publish the feedback). */
  configurationSet?: string;
  /** Requests each worker process has in flight to SES at most. */
  poolSize: number;
  /** Seconds an API call may take before the attempt is deferred. */
  timeoutSeconds: number;
  /** Messages per second and per hour through the route, across worker processes (null: no limit). */
  ratePerSecond: number | null;
  ratePerHour: number | null;
  /** When SES is judged down (its errors in a row) and tried again. */
  health: HealthSettings;
}

export interface MailboxRoute {
  type: 'mailbox';
}

export type { DirectRoute, SiteOverride, SourceAddress } from './direct-config.ts';
export type { SimulatedRoute } from './simulated-config.ts';

export type Route = SmtpRoute | SesRoute | MailboxRoute | DirectRoute | SimulatedRoute;

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
        ratePerHour: null,
        tags: 'none',
        health: DEFAULT_HEALTH,
      }
    : { type: 'mailbox' };
  return { routes: new Map([['default', route]]), rules: [{ match: {}, routes: ['default'] }] };
}

const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function smtpRoute(c: Checker, at: string, value: Obj): SmtpRoute {
  c.known(at, value, [
    'type',
    'url',
    'pool_size',
    'timeout_seconds',
    'rate_per_second',
    'rate_per_hour',
    'tags',
    'configuration_set',
    'unhealthy_after',
    'probe_seconds',
  ]);
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
  const poolSize = c.integer(`${at}.pool_size`, value.pool_size, DEFAULT_POOL_SIZE, 1, 1000);
  const timeoutSeconds = c.integer(
    `${at}.timeout_seconds`,
    value.timeout_seconds,
    DEFAULT_TIMEOUT_SECONDS,
    1,
    3600,
  );
  const ratePerSecond = rateOf(c, at, value);
  const ratePerHour = ratePerHourOf(c, at, value);
  const tags =
    value.tags === undefined ? 'none' : (c.oneOf(`${at}.tags`, value.tags, TAG_DIALECTS) ?? 'none');
  const configurationSet = configurationSetOf(c, at, value);
  if (configurationSet !== undefined && tags !== 'ses')
    c.problem(`${at}.configuration_set`, 'is only for a relay with "tags": "ses"');
  return {
    type: 'smtp',
    url,
    poolSize,
    timeoutSeconds,
    ratePerSecond,
    ratePerHour,
    tags,
    ...(configurationSet === undefined ? {} : { configurationSet }),
    health: healthOf(c, at, value),
  };
}

/** An Amazon SES route: its region and credentials, and optionally another endpoint and a configuration set. */
function sesRoute(c: Checker, at: string, value: Obj): SesRoute {
  c.known(at, value, [
    'type',
    'region',
    'access_key_id',
    'secret_access_key',
    'endpoint',
    'configuration_set',
    'pool_size',
    'timeout_seconds',
    'rate_per_second',
    'rate_per_hour',
    'unhealthy_after',
    'probe_seconds',
  ]);
  const region = c.string(`${at}.region`, value.region) ?? '';
  if (region && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(region))
    c.problem(`${at}.region`, 'must be an AWS region like eu-west-1');
  const accessKeyId = c.string(`${at}.access_key_id`, value.access_key_id) ?? '';
  const secretAccessKey = c.string(`${at}.secret_access_key`, value.secret_access_key) ?? '';
  const endpoint = c.string(`${at}.endpoint`, value.endpoint, true);
  if (endpoint !== undefined) {
    try {
      const parsed = new URL(endpoint);
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error('protocol');
    } catch {
      c.problem(`${at}.endpoint`, 'must be an http(s) URL, like https://email.eu-west-1.amazonaws.com');
    }
  }
  const configurationSet = configurationSetOf(c, at, value);
  return {
    type: 'ses',
    region,
    accessKeyId,
    secretAccessKey,
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(configurationSet === undefined ? {} : { configurationSet }),
    poolSize: c.integer(`${at}.pool_size`, value.pool_size, DEFAULT_POOL_SIZE, 1, 1000),
    timeoutSeconds: c.integer(
      `${at}.timeout_seconds`,
      value.timeout_seconds,
      DEFAULT_TIMEOUT_SECONDS,
      1,
      3600,
    ),
    ratePerSecond: rateOf(c, at, value),
    ratePerHour: ratePerHourOf(c, at, value),
    health: healthOf(c, at, value),
  };
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
    const type = c.oneOf(`${at}.type`, route.type, [
      'smtp',
      'ses',
      'direct',
      'mailbox',
      'simulated',
    ] as const);
    if (type === 'smtp') routes.set(name, smtpRoute(c, at, route));
    else if (type === 'direct') routes.set(name, directRoute(c, at, route));
    else if (type === 'ses') routes.set(name, sesRoute(c, at, route));
    else if (type === 'simulated') routes.set(name, simulatedRoute(c, at, route));
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
  // a rule naming a route with problems is not also reported as naming no route
  const declared = new Set(isObject(json.routes) ? Object.keys(json.routes) : []);
  const rules = rulesOf(c, json.rules, declared);
  if (c.problems.length > 0) throw new RoutesError(c.problems);
  return { routes, rules };
}

/** Whether any route hands mail to Amazon SES (an `ses` route, or a relay speaking its dialect): its feedback is taken. */
export function sendsThroughSes(config: Pick<RoutesConfig, 'routes'>): boolean {
  return [...config.routes.values()].some((r) => r.type === 'ses' || (r.type === 'smtp' && r.tags === 'ses'));
}

/** Where a route leads, for operators' eyes: never its credentials. */
export function routeTarget(route: Route): string {
  if (route.type === 'mailbox') return 'dev mailbox';
  if (route.type === 'simulated')
    return `feedback simulator (${route.bounceRate} % bounces, ${route.complaintRate} % complaints)`;
  if (route.type === 'smtp') {
    const url = new URL(route.url);
    return `${url.protocol}//${url.host}`;
  }
  if (route.type === 'ses')
    return `Amazon SES ${route.region}${route.endpoint ? ` at ${new URL(route.endpoint).host}` : ''}`;
  const from = route.sourceAddresses.map((s) => `${s.address} as ${s.ehlo}`).join(', ');
  return `recipients' mail servers, port ${route.port}${from ? `, from ${from}` : ''}`;
}
