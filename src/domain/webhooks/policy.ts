import type { DomainContext } from '../core/context.ts';
import { isLoopbackHost, type TargetNaming, type TargetPolicy } from './target.ts';

/**
 * Where the server lets a URL given by a caller point: the production rule (https, public addresses
 * only), POSTHORN_WEBHOOK_ALLOW_PRIVATE=1 for development, and, for webhook endpoints on a server
 * tried on this machine, the machine itself.
 */

/** Where URLs fetched for the caller may go (attachments by URL, flows' webhook steps). */
export function targetPolicy(ctx: Pick<DomainContext, 'config' | 'db'>): TargetPolicy {
  return { allowPrivate: ctx.config.webhookAllowPrivate, dnsServers: ctx.config.dnsServers };
}

/** Whether this server's public URL is this machine: a server tried locally, not one in production. */
export function isLocalServer(config: Pick<DomainContext['config'], 'publicUrl'>): boolean {
  return isLoopbackHost(new URL(config.publicUrl).hostname);
}

/**
 * Where webhook endpoints may go: as targetPolicy, and on a server whose public URL is local
 * (localhost, *.localhost, a loopback address) also this machine, over plain http too, so a
 * receiver next to it can be tried. A server with a public address keeps the production rule.
 */
export function webhookPolicy(ctx: Pick<DomainContext, 'config' | 'db'>): TargetPolicy {
  return { ...targetPolicy(ctx), allowLoopback: isLocalServer(ctx.config) };
}

/** What a person reads when an endpoint's URL is refused: what is allowed here, and what would allow more. */
export function endpointNaming(policy: TargetPolicy): TargetNaming {
  const hint = policy.allowPrivate
    ? undefined
    : policy.allowLoopback
      ? 'This server runs on a local address, so plain http and private addresses are allowed only to this computer (localhost, 127.0.0.1 or [::1]); the server setting POSTHORN_WEBHOOK_ALLOW_PRIVATE=1 allows other private addresses too (for development only)'
      : 'To try webhooks with a receiver on your own computer, run Posthorn on a local address (POSTHORN_PUBLIC_URL such as http://localhost:3000, the default), or with the server setting POSTHORN_WEBHOOK_ALLOW_PRIVATE=1 (for development only)';
  return { field: 'The URL', rule: 'webhooks go to public addresses only', hint };
}

/** What GET /webhooks/url-rules tells a form: where this server lets an endpoint's URL point. */
export function webhookUrlRules(ctx: Pick<DomainContext, 'config' | 'db'>) {
  const policy = webhookPolicy(ctx);
  return {
    object: 'webhook_url_rules' as const,
    local_server: policy.allowLoopback === true,
    loopback_allowed: policy.allowPrivate || policy.allowLoopback === true,
    private_allowed: policy.allowPrivate,
  };
}
