import { type Schemas, send } from '../../api/client.ts';

export type Asset = Schemas['Asset'];

/** Uploads an image to the project's media library (the assets API, as a bare image body). */
export async function uploadImage(project: string, file: File): Promise<Asset> {
  const res = await send('POST', `/v1/assets?filename=${encodeURIComponent(file.name)}`, {
    project,
    file: { content: file, type: file.type || 'application/octet-stream' },
    what: 'upload of the image',
  });
  return (await res.json()) as Asset;
}

/** The project's images, newest first, for the editor's image picker. */
export async function listImages(project: string): Promise<Asset[]> {
  const res = await send('GET', '/v1/assets?limit=100', { project });
  return ((await res.json()) as { data: Asset[] }).data;
}

/** An image's name without its extension, as a first alt text the person can change. */
export function altOf(file: File): string {
  return file.name.replace(/\.[a-z0-9]+$/i, '').replace(/[-_]+/g, ' ');
}
