import type { FastifyInstance } from 'fastify';

/**
 * The routes a Fastify app answers under a prefix, read from its route tree (`printRoutes`), as
 * `{method, path}` with Fastify's `:param` segments; HEAD (added for every GET) and catch-alls left
 * out. A route added to a door tomorrow is listed tomorrow, so a test walking them all covers it.
 */
export function routesUnder(app: FastifyInstance, prefix: string): { method: string; path: string }[] {
  const stack: string[] = [];
  const out: { method: string; path: string }[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    // an alternation of parameter names (`:id|:audience_id`) is one segment: its first name
    const path = (stack[depth - 1] ?? '') + m[2].replace(/(:\w+)(\|:\w+)+/g, '$1');
    stack[depth] = path;
    stack.length = depth + 1;
    if (!m[3] || !path.startsWith(`${prefix}/`) || path.includes('*')) continue;
    for (const method of m[3].split(', ')) if (method !== 'HEAD') out.push({ method, path });
  }
  return out;
}
