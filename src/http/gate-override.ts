import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { GateOverride } from '../domain/reputation/gate-pass.ts';
import { authOf } from './auth.ts';

/** `gate_override` of a start (campaign send or schedule, flow activation): go on despite the gate. */
export const GateOverrideField = Type.Optional(
  Type.Object(
    {
      reason: Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'why it goes on although the bulk-sender checks fail (recorded)',
      }),
    },
    {
      additionalProperties: false,
      title: 'GateOverride',
      description:
        'Start although the bulk-sender checks fail: project admins (and API keys) only, with a reason that is recorded with the failures',
    },
  ),
);

/** Who asks for the override (a key, or a signed-in admin or owner), with the body's reason; none without one. */
export function gateOverrideOf(
  request: FastifyRequest,
  body: { gate_override?: { reason: string } } | null | undefined,
): GateOverride | undefined {
  if (!body?.gate_override) return undefined;
  const auth = authOf(request);
  return {
    who: auth.key ? `key ${auth.key.id}` : `account ${auth.accountId}`,
    admin: auth.session ? auth.role === 'admin' || auth.role === 'owner' : true,
    reason: body.gate_override.reason,
  };
}
