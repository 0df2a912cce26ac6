import { existsSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AssetServer, fetchServed, png, startAssetServer, uploadImage } from '../helpers/assets.ts';

/**
 * Images in Posthorn (issue 49, build item 2) on the default store, a folder under the data
 * directory: upload, list, read and delete over the API; the image served at {public_url}/assets/…
 * with long-lived caching and its type; the size limit, SVG and the quota refused with clear
 * messages; a delete that warns while a published template shows the image; another project's
 * image a 404; and the images still served after the server restarts on the same data.
 */

const MAX = 200_000;
const QUOTA = 300_000;
let server: AssetServer;
let key: string;

const call = async (method: string, path: string, k = key, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${k}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

beforeAll(async () => {
  server = await startAssetServer({
    POSTHORN_ASSETS_MAX_BYTES: String(MAX),
    POSTHORN_ASSETS_QUOTA_BYTES: String(QUOTA),
  });
  key = (await server.first.signupConfirmed()).project_key.key;
});
afterAll(async () => {
  await server?.close();
});

describe('assets on the folder store', () => {
  let logo: any;
  let logoBytes: Buffer;

  it('uploads an image, answers its address and preview, lists it and reads it', async () => {
    logoBytes = await png(800, 600);
    const up = await uploadImage(server.url, key, logoBytes, 'logo.png', 'application/octet-stream');
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    logo = up.body;
    expect(logo).toMatchObject({
      object: 'asset',
      filename: 'logo.png',
      content_type: 'image/png',
      bytes: logoBytes.length,
      width: 800,
      height: 600,
    });
    expect(new URL(logo.url).pathname).toMatch(/^\/assets\/[0-9a-f]{12}\/[A-Za-z0-9_-]{22}\.png$/);
    expect(new URL(logo.preview_url).pathname).toMatch(/\.preview\.webp$/);

    // JPEG, GIF and WebP sent as the bare body, named by the query
    const sharp = (await import('sharp')).default;
    const others: any[] = [];
    for (const [format, type] of [
      ['jpeg', 'image/jpeg'],
      ['gif', 'image/gif'],
      ['webp', 'image/webp'],
    ] as const) {
      const bytes = await sharp(logoBytes).toFormat(format).toBuffer();
      const bare = await fetch(`${server.url}/v1/assets?filename=photo.${format}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': type },
        body: new Uint8Array(bytes),
      });
      const made: any = await bare.json();
      expect(bare.status, JSON.stringify(made)).toBe(200);
      expect(made).toMatchObject({
        filename: `photo.${format}`,
        content_type: type,
        width: 800,
        height: 600,
      });
      others.push(made);
    }

    const list = await call('GET', '/v1/assets?limit=1');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 4, limit: 1, offset: 0, quota_bytes: QUOTA, max_bytes: MAX });
    expect(list.body.data.map((a: any) => a.id)).toEqual([others[2].id]);
    const all = [logo, ...others];
    expect(list.body.used_bytes).toBe(all.reduce((sum, a) => sum + a.bytes + a.preview_bytes, 0));

    const one = await call('GET', `/v1/assets/${logo.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: logo.id, url: logo.url, used_by: [] });
  });

  it('serves the image at /assets/… with long-lived caching, its type and no sniffing', async () => {
    const served = await fetchServed(server.url, logo.url);
    expect(served.status).toBe(200);
    expect(served.body.equals(logoBytes)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");

    const preview = await fetchServed(server.url, logo.preview_url);
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-type')).toBe('image/webp');
    const sharp = (await import('sharp')).default;
    expect(await sharp(preview.body).metadata()).toMatchObject({ format: 'webp', width: 400, height: 300 });

    // a name that is not one of ours, or one never stored, is a plain 404
    const path = new URL(logo.url).pathname;
    expect((await fetch(`${server.url}${path.replace(/\.png$/, '.gif')}`)).status).toBe(404);
    expect((await fetch(`${server.url}/assets/..%2f..%2fsecret/x.png`)).status).toBe(404);
  });

  it('refuses an image over the limit and an SVG with a script, saying why, and stores nothing', async () => {
    const before = (await call('GET', '/v1/assets')).body.total;
    const justOver = await png(260, 260, true);
    expect(justOver.length).toBeGreaterThan(MAX);
    const over = await uploadImage(server.url, key, justOver, 'big.png');
    expect(over.status).toBe(413);
    expect(over.body.error).toBe(
      `The image is ${Math.ceil(justOver.length / 1024)} KB: over the 196 KB limit for images. Make it smaller (resize it, or save it as JPEG) and upload it again`,
    );
    // far over: refused before it is read whole
    const huge = await uploadImage(server.url, key, await png(400, 400, true), 'huge.png');
    expect(huge.status).toBe(413);
    expect(huge.body.error).toMatch(/^The upload is larger than the 196 KB limit for images/);

    const svg = Buffer.from(
      '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><rect width="10" height="10"/></svg>',
    );
    const scripted = await uploadImage(server.url, key, svg, 'logo.svg', 'image/svg+xml');
    expect(scripted.status).toBe(400);
    expect(scripted.body.error).toMatch(/SVG images are not accepted: this one holds a script.*PNG/);
    // the same bytes named as a PNG: judged by the contents
    const disguised = await uploadImage(server.url, key, svg, 'logo.png', 'image/png');
    expect(disguised.status).toBe(400);
    expect(disguised.body.error).toMatch(/SVG images are not accepted/);

    // a small file that claims too many pixels is refused before it is decoded
    const vast = await png(10, 10);
    vast.writeUInt32BE(5000, 16);
    vast.writeUInt32BE(5001, 20);
    vast.writeUInt32BE(crc32(vast.subarray(12, 29)), 29);
    const tooMany = await uploadImage(server.url, key, vast, 'vast.png');
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatch(/5000×5001 pixels: at most 25 megapixels/);

    const text = await uploadImage(server.url, key, Buffer.from('just text'), 'notes.png');
    expect(text.status).toBe(400);
    expect(text.body.error).toMatch(/"notes\.png" is not a PNG, JPEG, GIF or WebP image/);
    const noFile = await fetch(`${server.url}/v1/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: (() => {
        const form = new FormData();
        form.append('name', 'x');
        return form;
      })(),
    });
    expect(noFile.status).toBe(400);
    expect(((await noFile.json()) as any).error).toMatch(/no file in `file`/);
    const json = await call('POST', '/v1/assets', key, { file: 'x' });
    expect(json.status).toBe(400);
    expect(json.body.error).toMatch(/multipart\/form-data with a `file` field/);
    expect((await call('GET', '/v1/assets')).body.total).toBe(before);
  });

  it('refuses an upload past the project’s quota with a clear 409', async () => {
    const other = (await server.first.signupConfirmed()).project_key.key;
    const image = await png(240, 240, true);
    expect(image.length).toBeLessThan(MAX);
    expect((await uploadImage(server.url, other, image)).status).toBe(200);
    const refused = await uploadImage(server.url, other, await png(240, 240, true));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/would pass its quota of 293 KB.*POSTHORN_ASSETS_QUOTA_BYTES/);
    expect((await call('GET', '/v1/assets', other)).body.total).toBe(1);
    // another project's image is not found, and not deleted
    expect((await call('GET', `/v1/assets/${logo.id}`, other)).status).toBe(404);
    expect((await call('DELETE', `/v1/assets/${logo.id}`, other)).status).toBe(404);
    expect((await call('GET', '/v1/assets/not-an-id')).status).toBe(404);
  });

  it('warns before deleting an image a published template shows, and deletes it when forced', async () => {
    const template = await call('POST', '/v1/templates', key, {
      name: 'Launch',
      subject: 'We launched',
      html: `<p>Hello</p><img src="${logo.url}" alt="Our logo">`,
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    // a draft alone does not hold the image; the published version does
    expect((await call('GET', `/v1/assets/${logo.id}`)).body.used_by).toEqual([]);
    expect((await call('POST', `/v1/templates/${template.body.id}/publish`)).status).toBe(200);
    expect((await call('GET', `/v1/assets/${logo.id}`)).body.used_by).toEqual([
      { id: template.body.id, name: 'Launch' },
    ]);

    const warned = await call('DELETE', `/v1/assets/${logo.id}`);
    expect(warned.status).toBe(409);
    expect(warned.body.error).toMatch(/shown by the published template "Launch".*\?force=true/);
    expect((await fetchServed(server.url, logo.url)).status).toBe(200);

    expect((await call('DELETE', `/v1/assets/${logo.id}?force=true`)).status).toBe(204);
    expect((await call('GET', `/v1/assets/${logo.id}`)).status).toBe(404);
    expect((await fetchServed(server.url, logo.url)).status).toBe(404);
    expect((await fetchServed(server.url, logo.preview_url)).status).toBe(404);
  });

  it('keeps the images in the data directory and serves them after a restart', async () => {
    const kept = await uploadImage(server.url, key, await png(64, 64), 'kept.png');
    expect(kept.status).toBe(200);
    const file = `${server.dataDir}${new URL(kept.body.url).pathname}`;
    expect(existsSync(file)).toBe(true);
    await server.restart();
    const served = await fetchServed(server.url, kept.body.url);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(await call('GET', `/v1/assets/${kept.body.id}`)).toMatchObject({ status: 200 });
    expect((await call('DELETE', `/v1/assets/${kept.body.id}`)).status).toBe(204);
    expect(existsSync(file)).toBe(false);
  });
});
