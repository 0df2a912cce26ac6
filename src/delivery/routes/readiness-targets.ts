import type { Config } from '../../config.ts';
import { createSmtpRelayTransport } from '../smtp-relay.ts';
import { type Route, routeTarget, type SourceAddress } from './config.ts';

/**
 * The routes as the production readiness checks (domain/operator/readiness) need them: each
 * route's kind and target (never a password), a direct route's source addresses and port, and for
 * a relay a login to try. Only this folder reads the routes configuration itself.
 */
export interface RouteToCheck {
  name: string;
  type: Route['type'];
  target: string;
  sourceAddresses: SourceAddress[];
  /** A direct route's port of the mail servers it reaches (25 but on a simulated internet). */
  port: number | null;
  /** A relay's: connects, greets and logs in, then leaves; rejects with the relay's answer. */
  login: (() => Promise<void>) | null;
}

export function routesToCheck(config: Pick<Config, 'routes'>): RouteToCheck[] {
  return [...config.routes.routes].map(([name, route]) => ({
    name,
    type: route.type,
    target: routeTarget(route),
    sourceAddresses: route.type === 'direct' ? route.sourceAddresses : [],
    port: route.type === 'direct' ? route.port : null,
    login:
      route.type === 'smtp'
        ? async () => {
            const transport = createSmtpRelayTransport(route.url, {
              maxConnections: 1,
              timeoutSeconds: Math.min(route.timeoutSeconds, 10),
            });
            try {
              await transport.probe?.();
            } finally {
              await transport.close();
            }
          }
        : null,
  }));
}
