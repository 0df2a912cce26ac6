import { Type } from 'typebox';

/** Resend's cursor pagination: `limit` (1 to 100), `after` or `before` an item's id. */
export const CursorQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    after: Type.Optional(Type.String()),
    before: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export const IdParams = Type.Object({ id: Type.String() });

/** A list in Resend's shape. */
export const listOf = <T>(rows: T[], has_more = false) => ({ object: 'list' as const, has_more, data: rows });
