import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { Type } from 'typebox';
import { deleteAsset, getAsset, listAssets, uploadAsset } from '../../domain/assets/assets.ts';
import { tooLargeImage } from '../../domain/assets/images.ts';
import { assetStore, contentTypeOf, isAssetKey } from '../../domain/assets/store.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { ValidationError } from '../../domain/core/errors.ts';
import { projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, typed } from '../schemas.ts';
import { validatorCompiler } from '../validation.ts';
import { importerOf } from './contact-import-schemas.ts';

/**
 * Images in Posthorn (issue 49, build item 2): the API of a project's media library under /v1
 * (upload, list, read, delete) and the public door at {public_url}/assets/<key> that serves them
 * to mail readers and the dashboard, without a key.
 */

const AssetSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('asset'),
    url: Type.String({
      description: 'where the image is served, to put in a template: {public_url}/assets/…',
    }),
    preview_url: Type.String({ description: 'a resized preview (WebP, within 400×400 pixels)' }),
    filename: Nullable(Type.String({ description: 'the uploaded file’s name, for people' })),
    content_type: Type.String({ enum: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] }),
    bytes: Type.Integer(),
    preview_bytes: Type.Integer(),
    width: Type.Integer(),
    height: Type.Integer(),
    created_by: Nullable(Type.String({ description: 'the API key or the person who uploaded it' })),
    created_at: Type.String(),
  },
  { title: 'Asset' },
);
const AssetDetail = Type.Object(
  {
    ...AssetSchema.properties,
    used_by: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), {
      description: 'the templates whose last published version shows the image',
    }),
  },
  { title: 'AssetDetail' },
);
const AssetList = Type.Object(
  {
    ...page(AssetSchema).properties,
    used_bytes: Type.Integer({ description: 'what the project’s images take now, previews included' }),
    quota_bytes: Type.Integer({
      description: 'what they may take (POSTHORN_ASSETS_QUOTA_BYTES); 0 = no quota',
    }),
    max_bytes: Type.Integer({ description: 'the largest image accepted (POSTHORN_ASSETS_MAX_BYTES)' }),
  },
  { title: 'AssetList' },
);
const ImageFile = Type.String({ format: 'binary', description: 'a PNG, JPEG, GIF or WebP image' });
const UploadBody = Type.Unsafe<Readable>({
  content: {
    'multipart/form-data': {
      schema: Type.Object({ file: ImageFile }, { title: 'UploadAssetRequest' }),
    },
    'image/png': { schema: ImageFile },
    'image/jpeg': { schema: ImageFile },
    'image/gif': { schema: ImageFile },
    'image/webp': { schema: ImageFile },
  },
});
const Params = Type.Object({ id: Type.String({ description: 'asset id' }) });

/** What a multipart form adds around its file, beyond the image limit, before a body is refused unread. */
const FORM_OVERHEAD = 64 * 1024;
const SEND_AN_IMAGE =
  'Send the image as multipart/form-data with a `file` field (or the image itself as the body, with Content-Type image/png, image/jpeg, image/gif or image/webp)';

/** The upload's body is read by the route within the image limit; the schema only documents it. */
const documentOnlyBodies: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' ? () => true : validatorCompiler(route);

/** The request's body, read whole up to `cap` bytes; past it the rest is drained and the upload refused (413). */
async function readBody(
  request: FastifyRequest,
  stream: Readable,
  cap: number,
  maxBytes: number,
): Promise<Buffer> {
  const refuse = () => {
    stream.resume();
    return tooLargeImage(null, maxBytes);
  };
  if (Number(request.headers['content-length'] ?? 0) > cap) throw refuse();
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (total > cap) throw refuse();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The uploaded file, its name and the type the client claimed, from a form or a bare image body. */
async function uploadOf(request: FastifyRequest, maxBytes: number, named: string | undefined) {
  const body = request.body;
  if (!(body instanceof Readable)) throw new ValidationError(SEND_AN_IMAGE);
  const type = String(request.headers['content-type'] ?? '');
  const data = await readBody(request, body, maxBytes + FORM_OVERHEAD, maxBytes);
  if (!/^multipart\/form-data/i.test(type)) {
    return { data, filename: named ?? '', claimed: type };
  }
  const form = await new Response(new Uint8Array(data), { headers: { 'content-type': type } })
    .formData()
    .catch(() => null);
  if (!form)
    throw new ValidationError(`The form cannot be read: it is cut short or not multipart. ${SEND_AN_IMAGE}`);
  const file = form.get('file');
  if (!file || typeof file === 'string')
    throw new ValidationError(`The form has no file in \`file\`. ${SEND_AN_IMAGE}`);
  return { data: Buffer.from(await file.arrayBuffer()), filename: file.name, claimed: file.type };
}

/** The media library of a project: POST/GET /v1/assets, GET/DELETE /v1/assets/{id}. */
export async function assetRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const config = { auth: 'project' as const };
  const tags = ['assets'];
  const { maxBytes } = ctx.config.assets;
  // uploads are read by the route (within the image limit); these parsers are scoped to this file
  app.addContentTypeParser('multipart/form-data', (_request, payload, done) => done(null, payload));
  app.addContentTypeParser(/^image\//, (_request, payload, done) => done(null, payload));

  app.post(
    '/assets',
    {
      config,
      validatorCompiler: documentOnlyBodies,
      schema: {
        tags,
        summary: 'Upload an image to the project’s media library',
        operationId: 'uploadAsset',
        description: `A PNG, JPEG, GIF or WebP image (judged by its bytes, not its name) of at most POSTHORN_ASSETS_MAX_BYTES (5 MB unless the operator chose otherwise; GET /v1/assets answers this server’s limit as \`max_bytes\`), as the \`file\` field of a multipart/form-data body, or as the body itself with its image Content-Type (\`?filename=\` names it). SVG is refused: it can carry scripts. Answers the asset with its public \`url\` ({public_url}/assets/…, served with long-lived caching) and a resized preview. Past the project’s quota (POSTHORN_ASSETS_QUOTA_BYTES), 409; over the size limit, 413.`,
        querystring: Type.Object({
          filename: Type.Optional(
            Type.String({ maxLength: 200, description: 'the image’s name, for a bare image body' }),
          ),
        }),
        body: UploadBody,
        response: { 200: AssetSchema, ...errors(400, 401, 409, 413, 415) },
      },
    },
    async (request) => {
      const upload = await uploadOf(request, maxBytes, request.query.filename);
      return uploadAsset(ctx, projectOf(request), { ...upload, createdBy: await importerOf(request, ctx) });
    },
  );
  app.get(
    '/assets',
    {
      config,
      schema: {
        tags,
        summary: 'The project’s images, newest first, with what they take of its quota',
        operationId: 'listAssets',
        querystring: PageQuery,
        response: { 200: AssetList, ...errors(400, 401) },
      },
    },
    async (request) => listAssets(ctx, projectOf(request), pageOf(request.query)),
  );
  app.get(
    '/assets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One image, with the published templates that show it',
        operationId: 'getAsset',
        params: Params,
        response: { 200: AssetDetail, ...errors(401, 404) },
      },
    },
    async (request) => getAsset(ctx, projectOf(request), request.params.id),
  );
  app.delete(
    '/assets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete an image and its preview',
        operationId: 'deleteAsset',
        description:
          'An image that a published template still shows (its last published version) is not deleted: 409, naming the templates, since the emails sent from them would show a broken image. `?force=true` deletes it anyway.',
        params: Params,
        querystring: Type.Object({
          force: Type.Optional(
            Type.Boolean({ description: 'delete even when a published template shows it' }),
          ),
        }),
        response: { 204: Type.Null(), ...errors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      await deleteAsset(ctx, projectOf(request), request.params.id, request.query.force === true);
      return reply.code(204).send();
    },
  );
}

const notFound = (reply: FastifyReply) =>
  reply
    .code(404)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .type('text/plain; charset=utf-8')
    .send('Not found');

/**
 * The images themselves at {public_url}/assets/<project short id>/<name>, for anyone (mail readers
 * fetch them): long-lived caching (a name is never reused), the type of the stored image, no
 * sniffing, and a policy that lets the response run nothing, even opened on its own.
 */
export async function publicAssetRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/assets/:project/:name',
    {
      config: { auth: 'none' },
      schema: { hide: true, params: Type.Object({ project: Type.String(), name: Type.String() }) },
    },
    async (request, reply) => {
      const key = `${request.params.project}/${request.params.name}`;
      if (!isAssetKey(key)) return notFound(reply);
      const object = await assetStore(ctx.config.assets).get(key);
      if (!object) return notFound(reply);
      if (object.bytes > 0) reply.header('content-length', object.bytes);
      return reply
        .header('content-type', contentTypeOf(key))
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(object.body);
    },
  );
}
