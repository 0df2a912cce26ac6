import { SMTPServer } from 'smtp-server';

/**
 * An SMTP sink in a process of its own that does nothing but note when each message's data ended
 * (and for whom, and its Feedback-ID), one JSON line per message on stdout: arrival times measured
 * here are not skewed by the test process's own work. Prints `{"port": n}` first.
 */
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  maxClients: 200,
  onData(stream, session, callback) {
    let head = '';
    stream.on('data', (chunk: Buffer) => {
      if (head.length < 16_384) head += chunk.toString('latin1');
    });
    stream.on('end', () => {
      const at = Date.now();
      const header = (name: string) =>
        new RegExp(`^${name}:[ \\t]*([^\\r\\n]*)`, 'im').exec(
          head.slice(0, head.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' '),
        )?.[1] ?? null;
      process.stdout.write(
        `${JSON.stringify({
          at,
          to: session.envelope.rcptTo.map((r) => r.address),
          messageId: header('Message-ID'),
          feedbackId: header('Feedback-ID'),
          subject: header('Subject'),
        })}\n`,
      );
      callback();
    });
  },
});
server.on('error', () => {});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.server.address() as { port: number }).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
