import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A delivery as the receiver saw it: the parsed event, the raw body and the headers. */
export interface ReceivedHook {
  type: string;
  data: Record<string, any>;
  body: string;
  headers: IncomingHttpHeaders;
}

/**
 * A webhook endpoint on loopback for tests: it answers 200 to every delivery and keeps each, in
 * order. The server under test needs POSTHORN_WEBHOOK_ALLOW_PRIVATE=1 to deliver to it.
 */
export async function startWebhookReceiver() {
  const hooks: ReceivedHook[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hooks.push({ ...JSON.parse(body), body, headers: req.headers });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hooks,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
