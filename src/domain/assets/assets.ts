import { type Selectable, sql } from 'kysely';
import type { AssetsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { type Page, readPage } from '../core/pages.ts';
import { checkImage, sizeText } from './images.ts';
import { type AssetStore, assetKeys, assetStore, CONTENT_TYPES } from './store.ts';

/**
 * A project's images (issue 49, build item 2): uploaded once, kept in the operator's store and
 * served at {public_url}/assets/<key> for templates and campaigns to show. Each has a resized
 * preview for the media library. A project's images together stay within its quota; an image a
 * published template still shows is deleted only when the caller insists.
 */

type AssetRow = Selectable<AssetsTable>;
type Ctx = Pick<DomainContext, 'db' | 'config'>;

export interface Upload {
  data: Buffer;
  /** The file's name as the client sent it (shown in the library; never used as a path). */
  filename: string;
  /** The type the client claimed (only used to word a refusal; the bytes decide). */
  claimed: string;
  createdBy: string;
}

/** The public address of a stored key. */
export const assetUrl = (ctx: Pick<DomainContext, 'config'>, key: string) =>
  `${ctx.config.publicUrl}/assets/${key}`;

function present(ctx: Ctx, row: AssetRow) {
  return {
    id: row.id,
    object: 'asset' as const,
    url: assetUrl(ctx, row.key),
    preview_url: assetUrl(ctx, row.preview_key),
    filename: row.filename,
    content_type: row.content_type,
    bytes: row.bytes,
    preview_bytes: row.preview_bytes,
    width: row.width,
    height: row.height,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
  };
}

/** What the project's images take now, originals and previews. */
async function usedBytes(ctx: Pick<DomainContext, 'db'>, projectId: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('assets')
    .select(sql<string>`coalesce(sum(bytes + preview_bytes), 0)`.as('used'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.used);
}

function checkQuota(ctx: Ctx, used: number, adding: number): void {
  const quota = ctx.config.assets.quotaBytes;
  if (quota === 0 || used + adding <= quota) return;
  throw new ConflictError(
    `The project's images would pass its quota of ${sizeText(quota)}: they take ${sizeText(used)} and this one needs ${sizeText(adding)} more (with its preview). Delete images the project no longer uses (DELETE /v1/assets/{id}), or ask the operator to raise POSTHORN_ASSETS_QUOTA_BYTES`,
  );
}

/** A clean display name for the uploaded file (no path, no control characters, at most 200 characters). */
function displayName(name: string): string | null {
  const base = name.split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = base.replace(/[\u0000-\u001f\u007f\ud800-\udfff]/g, '').trim();
  return clean ? clean.slice(0, 200) : null;
}

/** POST /v1/assets: checks the image, stores it and its preview, then records it within the quota. */
export async function uploadAsset(ctx: Ctx, projectId: string, upload: Upload) {
  const { maxBytes } = ctx.config.assets;
  const image = await checkImage(upload.data, { name: upload.filename, claimed: upload.claimed, maxBytes });
  const adding = upload.data.length + image.preview.length;
  checkQuota(ctx, await usedBytes(ctx, projectId), adding);
  const store = assetStore(ctx.config.assets);
  const { key, previewKey } = assetKeys(projectId, image.ext);
  const contentType = CONTENT_TYPES[image.ext];
  await store.put(key, upload.data, contentType);
  await store.put(previewKey, image.preview, CONTENT_TYPES.webp);
  try {
    const row = await ctx.db.transaction().execute(async (tx) => {
      // one upload at a time per project past this point, so two cannot both fit the last space
      await sql`select pg_advisory_xact_lock(hashtext('posthorn.assets'), hashtext(${projectId}))`.execute(
        tx,
      );
      checkQuota(ctx, await usedBytes({ db: tx }, projectId), adding);
      return tx
        .insertInto('assets')
        .values({
          project_id: projectId,
          key,
          preview_key: previewKey,
          filename: displayName(upload.filename),
          content_type: contentType,
          bytes: upload.data.length,
          preview_bytes: image.preview.length,
          width: image.width,
          height: image.height,
          created_by: upload.createdBy,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return present(ctx, row);
  } catch (err) {
    await removeObjects(store, [key, previewKey]);
    throw err;
  }
}

async function removeObjects(store: AssetStore, keys: string[]): Promise<void> {
  await Promise.all(keys.map((k) => store.delete(k).catch(() => undefined)));
}

/** GET /v1/assets: the project's images, newest first, with what they take of the quota. */
export async function listAssets(ctx: Ctx, projectId: string, page: Page) {
  const base = ctx.db.selectFrom('assets').where('project_id', '=', projectId);
  const [{ rows, ...counts }, used] = await Promise.all([
    readPage(base, (b) => b.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'), page),
    usedBytes(ctx, projectId),
  ]);
  return {
    ...counts,
    data: rows.map((row) => present(ctx, row)),
    used_bytes: used,
    quota_bytes: ctx.config.assets.quotaBytes,
    max_bytes: ctx.config.assets.maxBytes,
  };
}

async function findAsset(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string): Promise<AssetRow> {
  if (!isUuid(id)) throw new NotFoundError('Asset');
  const row = await ctx.db
    .selectFrom('assets')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('Asset');
  return row;
}

/**
 * The templates whose last published version shows the image (its path, or its preview's, in the
 * compiled HTML or the source), by name.
 */
async function publishedUsers(ctx: Pick<DomainContext, 'db'>, row: AssetRow) {
  const paths = [`/assets/${row.key}`, `/assets/${row.preview_key}`];
  const shows = (column: string) =>
    sql<boolean>`(${sql.join(
      paths.map((p) => sql`position(${p} in coalesce(${sql.ref(column)}, '')) > 0`),
      sql` or `,
    )})`;
  return ctx.db
    .selectFrom('templates as t')
    .innerJoin('template_versions as v', (join) =>
      join.onRef('v.template_id', '=', 't.id').onRef('v.version', '=', 't.latest_version'),
    )
    .select(['t.id', 't.name'])
    .where('t.project_id', '=', row.project_id)
    .where((eb) => eb.or([shows('v.compiled_html'), shows('v.mjml'), shows('v.html')]))
    .orderBy('t.name')
    .limit(20)
    .execute();
}

/** GET /v1/assets/{id}: the image, with the published templates that show it. */
export async function getAsset(ctx: Ctx, projectId: string, id: string) {
  const row = await findAsset(ctx, projectId, id);
  return { ...present(ctx, row), used_by: await publishedUsers(ctx, row) };
}

/**
 * DELETE /v1/assets/{id}: removes the record, then the image and its preview from the store. An
 * image that a published template still shows is a 409 naming the templates, unless `force`.
 */
export async function deleteAsset(ctx: Ctx, projectId: string, id: string, force: boolean): Promise<void> {
  const row = await findAsset(ctx, projectId, id);
  if (!force) {
    const users = await publishedUsers(ctx, row);
    if (users.length > 0)
      throw new ConflictError(
        `The image is shown by the published template${users.length > 1 ? 's' : ''} ${users.map((t) => `"${t.name}" (${t.id})`).join(', ')}: emails sent from ${users.length > 1 ? 'them' : 'it'} would show a broken image. Publish ${users.length > 1 ? 'them' : 'it'} without the image first, or delete anyway with ?force=true`,
      );
  }
  const gone = await ctx.db
    .deleteFrom('assets')
    .where('id', '=', row.id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (Number(gone.numDeletedRows) === 0) throw new NotFoundError('Asset');
  await removeObjects(assetStore(ctx.config.assets), [row.key, row.preview_key]);
}
