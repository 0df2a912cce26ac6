import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';
import { eventually } from './eventually.ts';

export interface SinkMessage {
  from: string;
  to: string[];
  raw: Buffer;
  parsed: ParsedMail;
  /** When the message's data ended (Date.now()), before any `delayMs`. */
  receivedAt: number;
}

export interface SmtpSink {
  port: number;
  url: string;
  messages: SinkMessage[];
  /** Called per RCPT TO: return an SMTP error to refuse (e.g. `{ code: 451, message: 'try later' }`). */
  onRecipient?: (address: string) => { code: number; message: string } | undefined;
  /** Milliseconds to wait before accepting each message (to keep messages in flight). */
  delayMs: number;
  /** Called per message: a promise returned holds its answer until it resolves (the delivery in flight). */
  hold?: (recipients: string[]) => Promise<void> | undefined;
  /** Return true to never answer a message's DATA (a relay that hangs): the client must give up. */
  hang?: (recipients: string[]) => boolean;
  waitFor(predicate: (m: SinkMessage) => boolean, timeoutMs?: number): Promise<SinkMessage>;
  close(): Promise<void>;
  /** Stops listening and drops every connection at once, as a relay that dies does. */
  kill(): Promise<void>;
}

/** A real SMTP server on 127.0.0.1 (nodemailer's smtp-server) that keeps and parses what it receives. */
export async function startSmtpSink(opts: { port?: number } = {}): Promise<SmtpSink> {
  const sink = { messages: [] as SinkMessage[], delayMs: 0 } as SmtpSink;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const refusal = sink.onRecipient?.(address.address);
      if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        if (sink.hang?.(session.envelope.rcptTo.map((r) => r.address))) return; // never answers
        const raw = Buffer.concat(chunks);
        const receivedAt = Date.now();
        if (sink.delayMs > 0) await new Promise((r) => setTimeout(r, sink.delayMs));
        await sink.hold?.(session.envelope.rcptTo.map((r) => r.address));
        sink.messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          receivedAt,
          parsed: await simpleParser(raw),
        });
        callback();
      });
    },
  });
  // a client that dies mid-session (a killed worker) resets its connection: not the sink's problem
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  sink.port = port;
  sink.url = `smtp://127.0.0.1:${port}`;
  sink.waitFor = (predicate, timeoutMs = 15_000) =>
    eventually(
      () => {
        const found = sink.messages.find(predicate);
        if (!found) throw new Error(`${sink.messages.length} received`);
        return found;
      },
      { timeoutMs, intervalMs: 25, message: 'no matching message reached the SMTP sink' },
    );
  sink.close = () => new Promise((resolve) => server.close(() => resolve()));
  sink.kill = () => {
    const closed = new Promise<void>((resolve) => server.server.close(() => resolve()));
    const open = (server as unknown as { connections: Set<{ _socket?: { destroy(): void } }> }).connections;
    for (const connection of open) connection._socket?.destroy();
    return closed;
  };
  return sink;
}

/** The six-character code in a Posthorn code email. */
export function codeIn(message: SinkMessage): string {
  const match = /code(?: is)?: ([A-Z0-9]{6})/.exec(message.parsed.text ?? '');
  if (!match) throw new Error(`no code in message: ${message.parsed.subject}`);
  return match[1];
}
