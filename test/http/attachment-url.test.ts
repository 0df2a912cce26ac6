import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAttachmentPaths } from '../../src/domain/emails/attachment-url.ts';

/**
 * Attachments given by URL (`path`, issue 35), fetched as the message is accepted: judged as a
 * webhook's target (public addresses only unless the operator allows private ones; https), no
 * redirect followed, the answer's name and type kept. Refusals happen before any connection.
 */

const server = createServer((req, res) => {
  if (req.url === '/report.csv')
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
