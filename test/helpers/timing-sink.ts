import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface TimedMessage {
  at: number;
  to: string[];
  messageId: string | null;
  feedbackId: string | null;
  subject: string | null;
}

export interface TimingSink {
  url: string;
  messages: TimedMessage[];
  close(): Promise<void>;
}

/** Starts test/helpers/timing-sink-process.ts in its own process and collects what it notes. */
export async function startTimingSink(): Promise<TimingSink> {
  const child: ChildProcess = spawn(
    process.execPath,
    [new URL('./timing-sink-process.ts', import.meta.url).pathname],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const messages: TimedMessage[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the timing sink exited (${code})`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const value = JSON.parse(line);
      if ('port' in value) resolve(value.port);
      else messages.push(value);
    });
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
