import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { DomainContext } from '../../domain/core/context.ts';
import { NotFoundError } from '../../domain/core/errors.ts';
import { sentAttachments } from '../../domain/emails/sent-attachments.ts';
import { projectOf } from '../auth.ts';
import { typed } from '../schemas.ts';
import { downloadLink } from './downloads.ts';
import { CursorQuery, IdParams, listOf } from './schemas.ts';
import { derivedId } from './vocabulary.ts';

/**
 * A sent email's attachments (issue 51) over the message as accepted
 * (domain/emails/sent-attachments.ts), each with a link that needs no key (downloads.ts); an
 * attachment's id is derived from the message and its position.
 */

const project = { auth: 'project' as const };

export async function resendAttachmentRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  const shown = async (projectId: string, emailId: string) => {
    const email = await sentAttachments(ctx, projectId, emailId);
    return email.attachments.map((a) => ({
      id: derivedId(email.id, String(a.position)),
      position: a.position,
      ...(a.filename ? { filename: a.filename } : {}),
      size: a.size,
      content_type: a.content_type ?? 'application/octet-stream',
      content_disposition: a.content_id ? 'inline' : 'attachment',
      ...(a.content_id ? { content_id: a.content_id } : {}),
    }));
  };
  app.get(
    '/emails/:id/attachments',
    { config: project, schema: { hide: true, params: IdParams, querystring: CursorQuery } },
    async (request) => {
      const projectId = projectOf(request);
      const list = await shown(projectId, request.params.id);
      return listOf(
        list.map(({ position, ...a }) => ({
          ...a,
          ...downloadLink(ctx, request, projectId, 'sent', request.params.id, String(position)),
        })),
      );
    },
  );
  app.get(
    '/emails/:id/attachments/:attachment_id',
    {
      config: project,
      schema: { hide: true, params: Type.Object({ id: Type.String(), attachment_id: Type.String() }) },
    },
    async (request) => {
      const projectId = projectOf(request);
      const found = (await shown(projectId, request.params.id)).find(
        (a) => a.id === request.params.attachment_id,
      );
      if (!found) throw new NotFoundError('Attachment');
      const { position, ...a } = found;
      return {
        object: 'attachment',
        ...a,
        ...downloadLink(ctx, request, projectId, 'sent', request.params.id, String(position)),
      };
    },
  );
}
