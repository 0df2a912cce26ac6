import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * The docs page works offline, for a self-hoster: no Scalar service buttons (the agent's "Ask AI",
 * "Generate MCP", the developer tools' "Deploy" and "Share"), no fonts from Scalar's CDN (the
 * system's), no telemetry. Its script is served by the plugin from this server.
 */
const DOCS_PAGE = {
  url: '/v1/openapi.json',
  title: 'Posthorn API',
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  withDefaultFonts: false,
  telemetry: false,
} as const;

export const DOCS_PREFIX = '/v1/docs';

// what the page's own server says about its connection, not about the page
const HOP_BY_HOP = new Set(['connection', 'content-length', 'date', 'keep-alive', 'transfer-encoding']);

/**
 * Scalar's plugin on a server of its own, which no socket reaches: the API's docs routes pass their
 * requests to it in memory.
 */
async function scalarServer(): Promise<FastifyInstance> {
  const { default: scalar } = await import('@scalar/fastify-api-reference');
  const docs = Fastify({ logger: false });
  await docs.register(scalar, { routePrefix: DOCS_PREFIX, configuration: DOCS_PAGE });
  await docs.ready();
  return docs;
}

/**
 * The API docs page (Scalar) at /v1/docs, loaded on its first request: its package carries the
 * page's 4 MB script and an OpenAPI parser, about 50 MB of memory and 0.4 s of start in every API
 * process, whether anyone opens the page or not. A path under /v1/docs the page does not have is
 * the API's 404.
 */
export async function docsPageRoutes(app: FastifyInstance) {
  let server: Promise<FastifyInstance> | undefined;
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    server ??= scalarServer().catch((err: unknown) => {
      server = undefined; // tried again on the next request
      throw err;
    });
    const answer = await (await server).inject({
      method: request.method as 'GET' | 'HEAD',
      url: request.url,
      headers: { accept: request.headers.accept ?? '*/*' },
    });
    if (answer.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
    return reply.code(answer.statusCode).send(answer.rawPayload);
  };
  app.get(DOCS_PREFIX, { schema: { hide: true } }, serve);
  app.get(`${DOCS_PREFIX}/*`, { schema: { hide: true } }, serve);
  app.addHook('onClose', async () => {
    await (await server?.catch(() => undefined))?.close();
  });
}
