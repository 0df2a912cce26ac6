import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sesLocalModule from 'aws-ses-v2-local';
import { eventually } from './eventually.ts';

type StartSesLocal = (config?: { host?: string; port?: number }) => Promise<Server>;
// a CommonJS module: under Node its default export is under `default`, under Vite it is the import
const imported = sesLocalModule as unknown as StartSesLocal | { default: StartSesLocal };
const startSesLocal: StartSesLocal = typeof imported === 'function' ? imported : imported.default;

/** A SendEmail call as it reached the local SES: its JSON body and the raw message it carried. */
export interface SesRequest {
  body: {
    FromEmailAddress?: string;
    Destination?: { ToAddresses?: string[] };
    Content?: { Raw?: { Data: string } };
    EmailTags?: { Name: string; Value: string }[];
    ConfigurationSetName?: string;
  };
  raw: Buffer | null;
}

export interface SesLocal {
  /** The endpoint a route's `endpoint` names. */
  endpoint: string;
  /** Every SendEmail call, in order. */
  requests: SesRequest[];
  /** The messages the local SES stored (its GET /store), with the MessageId it answered. */
  stored(): Promise<{ messageId: string; from: string; subject: string; destination: { to: string[] } }[]>;
  /** The SendEmail call whose raw message has this Message-ID. */
  waitForMessage(messageId: string, timeoutMs?: number): Promise<SesRequest>;
  close(): Promise<void>;
}

/**
 * The `aws-ses-v2-local` server (Amazon SES's v2 API, as the AWS SDK speaks it) on 127.0.0.1 at a
 * free port. It keeps what it parsed of each message, not the bytes nor the tags: the requests are
 * read as they arrive too (a listener beside its own, the body untouched), so a test sees the raw
 * message exactly as sent and the EmailTags.
 */
export async function startSes(): Promise<SesLocal> {
  const server: Server = await startSesLocal({ host: '127.0.0.1', port: 0 });
  const requests: SesRequest[] = [];
  server.prependListener('request', (req) => {
    if (req.method !== 'POST' || req.url !== '/v2/email/outbound-emails') return;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SesRequest['body'];
      const data = body.Content?.Raw?.Data;
      requests.push({ body, raw: data ? Buffer.from(data, 'base64') : null });
    });
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    requests,
    async stored() {
      const res = await fetch(`${endpoint}/store`);
      return ((await res.json()) as { emails: Awaited<ReturnType<SesLocal['stored']>> }).emails;
    },
    waitForMessage(messageId, timeoutMs = 20_000) {
      return eventually(
        () => {
          const found = requests.find((r) => r.raw?.toString('latin1').includes(`Message-ID: ${messageId}`));
          if (!found) throw new Error(`${requests.length} SendEmail call(s), none with ${messageId}`);
          return found;
        },
        { timeoutMs, intervalMs: 25, message: `SES got no message ${messageId}` },
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
