import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/domain/core/errors.ts';
import {
  FETCHES_PER_PROCESS,
  FETCHES_PER_REQUEST,
  REQUEST_FETCH_BYTES,
} from '../../src/domain/emails/attachment-limits.ts';
import { fetchAttachmentPaths, fetchEachAttachmentPaths } from '../../src/domain/emails/attachment-url.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * Attachments given by URL (`path`, issue 35), fetched as the message is accepted: judged as a
 * webhook's target (public addresses only unless the operator allows private ones; https), no
 * redirect followed, the answer's name and type kept. Refusals happen before any connection.
 */

const MB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'a');
/** What the file server has seen: requests by path, those open now and at most, bytes written. */
const seen: string[] = [];
let open_ = 0;
let most = 0;
let written = 0;

/** `mb` MB made as they are written, waiting whenever the socket is full (never held in memory). */
function stream(res: import('node:http').ServerResponse, mb: number) {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': mb * MB });
  let left = mb * MB;
  const more = () => {
    while (left > 0 && !res.destroyed) {
      const part = CHUNK.subarray(0, Math.min(CHUNK.length, left));
      left -= part.length;
      written += part.length;
      if (left === 0) return void res.end(part);
      if (!res.write(part)) return void res.once('drain', more);
    }
  };
  more();
}

const server = createServer((req, res) => {
  seen.push(req.url ?? '');
  open_++;
  most = Math.max(most, open_);
  res.on('close', () => open_--);
  const big = req.url?.match(/^\/big\/\w+\?mb=(\d+)$/);
  if (big) stream(res, Number(big[1]));
  else if (req.url?.startsWith('/hang/')) {
    // the head and one byte, then nothing until the client goes
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.write('x');
  } else if (req.url === '/report.csv')
    res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' }).end('a,b\n1,2\n');
  else if (req.url === '/moved') res.writeHead(302, { location: '/report.csv' }).end();
  else if (req.url === '/slow.pdf') {
    // a byte every 50 ms, for ever: the socket never idles, so only a deadline ends it
    res.writeHead(200, { 'content-type': 'application/pdf' });
    const drip = setInterval(() => res.write('x'), 50);
    res.on('close', () => clearInterval(drip));
  } else if (req.url?.startsWith('/broken')) res.writeHead(200).end('ok');
  else res.writeHead(404).end();
});
let base: string;
const open = { allowPrivate: true, dnsServers: [] };
const closed = { allowPrivate: false, dnsServers: [] };

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());
beforeEach(async () => {
  // what an earlier test cut off has closed
  await eventually(() => open_ === 0, { message: 'connections still open' });
  seen.length = 0;
  most = 0;
  written = 0;
});
const files = (names: string[]) => ({ attachments: names.map((n) => ({ path: `${base}${n}` })) });

describe('attachments by URL', () => {
  it('fetches the file: content, name from the URL, type from the answer', async () => {
    const [message] = await fetchAttachmentPaths(open, [{ attachments: [{ path: `${base}/report.csv` }] }]);
    expect(message.attachments).toEqual([
      {
        content: Buffer.from('a,b\n1,2\n').toString('base64'),
        filename: 'report.csv',
        content_type: 'text/csv',
      },
    ]);
  });

  it('keeps a given name and type, and leaves attachments with content alone', async () => {
    const [message] = await fetchAttachmentPaths(open, [
      {
        attachments: [
          { path: `${base}/report.csv`, filename: 'q3.csv', content_type: 'text/plain' },
          { content: 'eA==', filename: 'x' },
        ],
      },
    ]);
    expect(message.attachments?.[0]).toMatchObject({ filename: 'q3.csv', content_type: 'text/plain' });
    expect(message.attachments?.[1]).toEqual({ content: 'eA==', filename: 'x' });
  });

  it('gives up on a file that never finishes, and keeps a name with a broken %-escape as written', async () => {
    await expect(
      fetchAttachmentPaths(open, [{ attachments: [{ path: `${base}/slow.pdf` }] }], { timeoutMs: 400 }),
    ).rejects.toThrow(/slow\.pdf took longer than 0\.4 s$/);
    const [message] = await fetchAttachmentPaths(open, [
      { attachments: [{ path: `${base}/broken%E0%A4%A.txt` }] },
    ]);
    expect(message.attachments?.[0]).toMatchObject({ filename: 'broken%E0%A4%A.txt' });
  });

  it('refuses a redirect, a missing file, a private address and plain http, naming the attachment', async () => {
    await expect(fetchAttachmentPaths(open, [{ attachments: [{ path: `${base}/moved` }] }])).rejects.toThrow(
      /^`attachments\[0\]\.path`: .* answered a redirect \(302\), which is not followed$/,
    );
    await expect(
      fetchAttachmentPaths(open, [{ attachments: [{ path: `${base}/gone.pdf` }] }]),
    ).rejects.toThrow(/answered 404$/);
    await expect(
      fetchAttachmentPaths(closed, [{}, { attachments: [{ path: 'https://127.0.0.1/x.pdf' }] }]),
    ).rejects.toThrow(
      /^`\[1\]\.attachments\[0\]\.path` points to 127\.0\.0\.1, a loopback address: attachments are fetched from public addresses only$/,
    );
    await expect(
      fetchAttachmentPaths(closed, [{ attachments: [{ path: 'http://files.example/x.pdf' }] }]),
    ).rejects.toThrow(/must use https \(got http\)/);
    await expect(fetchAttachmentPaths(closed, [{ attachments: [{ path: 'not a url' }] }])).rejects.toThrow(
      /must be a URL/,
    );
  });
});

describe('what a request may fetch (issue 47)', () => {
  it('stops a message at its 40 MB the moment its files pass it, its other fetches cut off', async () => {
    await expect(
      fetchAttachmentPaths(open, [files(['/big/a?mb=39', '/big/b?mb=39', '/big/c?mb=39'])]),
    ).rejects.toThrow(
      /^`attachments\[\d\]\.path`: \S+\/big\/\w\?mb=39 makes the message larger than the 40 MB it may be once encoded$/,
    );
    await eventually(() => open_ === 0, { timeoutMs: 30_000, message: 'the other fetches were not cut off' });
    // 30 MB make 40 once encoded, the sockets' buffers hold some more: the files were 117 MB
    expect(written).toBeLessThan(90 * MB);
  }, 60_000);

  it('refuses a request whose messages together pass its budget, even a permissive one', async () => {
    // each message within its 40 MB (25 MB are 33 once encoded), all eight 267 MB
    const eight = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => files([`/big/m${n}?mb=25`]));
    const budget = new RegExp(`pass the ${REQUEST_FETCH_BYTES / MB} MB one request may fetch`);
    for (const fetch of [fetchAttachmentPaths, fetchEachAttachmentPaths]) {
      written = 0;
      await expect(fetch(open, eight)).rejects.toThrow(budget);
      await eventually(() => open_ === 0, {
        timeoutMs: 30_000,
        message: 'the other fetches were not cut off',
      });
      // 60 MB make 80 once encoded, the sockets' buffers hold some more: the files were 200 MB
      expect(written).toBeLessThan(150 * MB);
    }
  }, 90_000);

  it('fetches a few files of a request at once, all of them within one deadline', async () => {
    const six = [1, 2, 3, 4, 5, 6].map((n) => files([`/hang/r${n}`]));
    const outcomes = await fetchEachAttachmentPaths(open, six, { timeoutMs: 500 });
    expect(outcomes).toHaveLength(6);
    for (const [i, outcome] of outcomes.entries()) {
      expect(outcome).toBeInstanceOf(ValidationError);
      expect((outcome as Error).message).toMatch(
        new RegExp(`^\`attachments\\[0\\]\\.path\`: \\S+/hang/r${i + 1} took longer than 0\\.5 s$`),
      );
    }
    // the deadline is the request's: the files still waiting for a place when it passed never started
    expect(seen).toHaveLength(FETCHES_PER_REQUEST);
    expect(most).toBe(FETCHES_PER_REQUEST);
  });

  it('fetches a bounded number of files at once in the whole process', async () => {
    const requests = FETCHES_PER_PROCESS / FETCHES_PER_REQUEST;
    const full: Promise<unknown>[] = Array.from({ length: requests }, (_, r) =>
      fetchAttachmentPaths(open, [files([1, 2, 3, 4].map((n) => `/hang/p${r}-${n}`))], { timeoutMs: 5000 }),
    );
    // one request more, which finds no place left before its own deadline
    await expect(fetchAttachmentPaths(open, [files(['/hang/late'])], { timeoutMs: 1000 })).rejects.toThrow(
      /\/hang\/late took longer than 1 s$/,
    );
    for (const r of await Promise.allSettled(full))
      expect(r.status === 'rejected' && String(r.reason)).toMatch(/took longer than 5 s$/);
    expect(seen).not.toContain('/hang/late');
    expect(seen).toHaveLength(FETCHES_PER_PROCESS);
    expect(most).toBe(FETCHES_PER_PROCESS);
  });

  it('in a permissive batch, refuses only the message whose file cannot be fetched', async () => {
    const outcomes = await fetchEachAttachmentPaths(open, [
      files(['/report.csv']),
      files(['/report.csv', '/gone.pdf']),
      { html: '<p>no files</p>' },
    ]);
    expect(outcomes[0]).toMatchObject({ attachments: [{ filename: 'report.csv' }] });
    expect(outcomes[1]).toBeInstanceOf(ValidationError);
    expect((outcomes[1] as Error).message).toMatch(/^`attachments\[1\]\.path`: .*answered 404$/);
    expect(outcomes[2]).toEqual({ html: '<p>no files</p>' });
  });
});
