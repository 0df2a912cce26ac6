import { SMTPServer } from 'smtp-server';

/** What the header sink keeps of one message: its envelope recipients and two header values. */
export interface HeaderRecord {
  to: string[];
  messageId: string | null;
  feedbackId: string | null;
}

export interface HeaderSink {
  url: string;
  messages: HeaderRecord[];
  close(): Promise<void>;
}

/** A header's value in an unfolded header block, or null. */
function headerValue(block: string, name: string): string | null {
  return new RegExp(`^${name}:[ \\t]*([^\\n]*)`, 'im').exec(block)?.[1]?.trim() ?? null;
}

/**
 * A real SMTP server on 127.0.0.1 for sends too large to keep whole (tens of thousands of
 * messages): it keeps only each message's recipients, Message-ID and Feedback-ID, read from the
 * header block, so memory stays small and nothing is parsed beyond the headers. A message counts
 * once its DATA has ended, as with test/helpers/smtp-sink.ts.
 */
export async function startHeaderSink(): Promise<HeaderSink> {
  const messages: HeaderRecord[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    maxClients: 500,
    onData(stream, session, callback) {
      let head = '';
      let headDone = false;
      stream.on('data', (chunk: Buffer) => {
        if (headDone) return;
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end >= 0) {
          head = head.slice(0, end);
          headDone = true;
        }
      });
      stream.on('end', () => {
        const block = head.replace(/\r\n[ \t]+/g, ' ').replace(/\r\n/g, '\n');
        messages.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          messageId: headerValue(block, 'Message-ID'),
          feedbackId: headerValue(block, 'Feedback-ID'),
        });
        callback();
      });
    },
  });
  // a client that dies mid-session (a killed worker) resets its connection: not the sink's problem
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
