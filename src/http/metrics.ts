import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/database.ts';
import { jobsByTask, processMetrics } from '../domain/maintenance/metrics.ts';

/** How long a scrape waits for the queue's figures before leaving them out. */
const JOBS_TIMEOUT_MS = 2_000;

let defaultsCollected = false;

/** The API's metrics: requests by route and status, latency, the job queue; plus the process's counters. */
export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  latency: Histogram<'method' | 'route'>;
  /** The text exposition of this API's and this process's metrics, for GET /metrics. */
  render(): Promise<{ contentType: string; text: string }>;
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Builds one API's metrics. Requests are counted in memory (no database work per request); the
 * queue gauge reads graphile-worker's table when scraped, so it is the whole deployment's queue
 * whichever node answers. Node's process figures (CPU, memory, event loop) come with them.
 */
export function createApiMetrics(db: Db): ApiMetrics {
  if (!defaultsCollected) {
    collectDefaultMetrics({ register: processMetrics });
    defaultsCollected = true;
  }
  const registry = new Registry();
  const requests = new Counter({
    name: 'posthorn_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'posthorn_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'posthorn_jobs',
    help: 'Jobs in the queue by task and state: waiting (due, not taken), scheduled (due later), running, failed (out of attempts)',
    labelNames: ['task', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const row of await within(jobsByTask(db), JOBS_TIMEOUT_MS))
          this.set({ task: row.task, state: row.state }, row.count);
      } catch {
        // the database is away or slow: the series are missing from this scrape, not stale
      }
    },
  });
  return {
    registry,
    requests,
    latency,
    async render() {
      const [own, processText] = await Promise.all([registry.metrics(), processMetrics.metrics()]);
      // each exposition ends with a newline: one follows the other
      return {
        contentType: registry.contentType,
        text: own.endsWith('\n') ? own + processText : `${own}\n${processText}`,
      };
    },
  };
}

/** Counts every answered request under its route pattern (never the raw URL: ids would explode the series). */
export function observeRequests(app: FastifyInstance, metrics: ApiMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.latency.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
}

/** Whether an address is the machine itself: 127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127(\.\d{1,3}){3}$/.test(v4);
}

export interface MetricsCaller {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** The TCP peer (never X-Forwarded-For, which the client writes). */
  socketAddress: string | undefined;
  /** Whether the request carries forwarding headers, i.e. came through a proxy. */
  forwarded: boolean;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may read GET /metrics: with POSTHORN_METRICS_TOKEN set, whoever sends it as a Bearer token
 * (compared timing-safe); without it, only a client on this machine, and not through a proxy (a
 * reverse proxy on the same host would make every visitor look local). Null = allowed.
 */
export function refuseMetricsCaller(
  token: string | undefined,
  caller: MetricsCaller,
  endpoint = 'GET /metrics',
): { status: 401 | 403; error: string } | null {
  if (token) {
    const sent = /^Bearer\s+(\S+)\s*$/i.exec(caller.authorization ?? '')?.[1];
    if (sent !== undefined && timingSafeEqual(digest(sent), digest(token))) return null;
    return {
      status: 401,
      error: `${endpoint} needs the header \`Authorization: Bearer <POSTHORN_METRICS_TOKEN>\``,
    };
  }
  if (isLoopbackAddress(caller.socketAddress) && !caller.forwarded) return null;
  return {
    status: 403,
    error: `${endpoint} is served only to clients on this machine; set POSTHORN_METRICS_TOKEN to ${endpoint === 'GET /metrics' ? 'scrape it' : 'read it'} from elsewhere`,
  };
}
