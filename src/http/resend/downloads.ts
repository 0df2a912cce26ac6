import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError } from '../../domain/core/errors.ts';
import { isUuid } from '../../domain/core/ids.ts';
import { sentAttachment } from '../../domain/emails/sent-attachments.ts';
import { inboundAttachment, inboundRaw } from '../../domain/inbound/messages.ts';
import { projectFacts } from '../../domain/plans/project-facts.ts';
import { typed } from '../schemas.ts';

/**
 * The download links of the door (issue 51): Resend hands out links that need no key (the SDK's
 * `receiving.forward` fetches a received message's source by one). Here a link names the project,
 * the message (received or sent) and the part (`raw` or an attachment's position), expires after
 * an hour and is signed with a key derived from the server's secret; any other is 404.
 */

const LINK_TTL_MS = 3600_000;
type Kind = 'received' | 'sent';

const signed = (projectId: string, kind: Kind, id: string, part: string, expires: number) =>
  `resend-download:${projectId}:${kind}:${id}:${part}:${expires}`;
const sign = (ctx: DomainContext, projectId: string, kind: Kind, id: string, part: string, expires: number) =>
  ctx.secrets.hash(signed(projectId, kind, id, part, expires)).toString('base64url');

/** A link to one part of a message, and when it expires (Resend's `download_url`, `expires_at`). */
export function downloadLink(
  ctx: DomainContext,
  request: FastifyRequest,
  projectId: string,
  kind: Kind,
  id: string,
  part: string,
) {
  const expires = Date.now() + LINK_TTL_MS;
  const signature = sign(ctx, projectId, kind, id, part, expires);
  const query = new URLSearchParams({ project: projectId, expires: String(expires), signature });
  return {
    download_url: `${request.protocol}://${request.host}/resend/downloads/${kind}/${id}/${part}?${query}`,
    expires_at: new Date(expires).toISOString(),
  };
}

const mediaType = (type: string | null) =>
  type && /^[\w.+-]+\/[\w.+-]+$/.test(type) ? type : 'application/octet-stream';

export async function resendDownloadRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/downloads/:kind/:id/:part',
    {
      config: { auth: 'none' },
      schema: {
        hide: true,
        params: Type.Object({ kind: Type.String(), id: Type.String(), part: Type.String() }),
        querystring: Type.Object(
          { project: Type.String(), expires: Type.String(), signature: Type.String() },
          { additionalProperties: true },
        ),
      },
    },
    async (request, reply) => {
      const { kind, id, part } = request.params;
      const { project: projectId, expires, signature } = request.query;
      const at = Number(expires);
      const valid =
        (kind === 'received' || kind === 'sent') &&
        isUuid(projectId) &&
        isUuid(id) &&
        (part === 'raw' ? kind === 'received' : /^\d{1,4}$/.test(part)) &&
        Number.isSafeInteger(at) &&
        at > Date.now() &&
        // compared in constant time
        ctx.secrets.matches(signed(projectId, kind, id, part, at), Buffer.from(signature, 'base64url'));
      if (!valid) throw new NotFoundError('Download');
      if (kind === 'sent') {
        const { meta, content } = await sentAttachment(ctx, projectId, id, Number(part));
        return reply.type(mediaType(meta.content_type)).send(content);
      }
      const reader = await projectFacts(ctx, projectId);
      if (part === 'raw') return reply.type('message/rfc822').send(await inboundRaw(ctx, reader, id));
      const { meta, content } = await inboundAttachment(ctx, reader, id, Number(part));
      return reply.type(mediaType(meta.content_type)).send(content);
    },
  );
}
