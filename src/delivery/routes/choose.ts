import type { RouteMatch, RoutesConfig, Stream } from './config.ts';

/** What the rules look at in a message. */
export interface RoutedMessage {
  stream: Stream;
  /** Null for the service's own mail (codes, notices): a rule naming a project never matches it. */
  projectId: string | null;
  /** The sending domain (of the From address). */
  fromDomain: string;
  /** The domain of the recipient the rules decide by (the message's first recipient). */
  recipientDomain: string;
}

function fits(match: RouteMatch, message: RoutedMessage): boolean {
  if (match.stream !== undefined && match.stream !== message.stream) return false;
  if (match.projectId !== undefined && match.projectId !== message.projectId?.toLowerCase()) return false;
  if (match.domain !== undefined && match.domain !== message.fromDomain.toLowerCase()) return false;
  if (match.recipientDomain !== undefined && match.recipientDomain !== message.recipientDomain.toLowerCase())
    return false;
  return true;
}

/**
 * The first route of every rule a message of this stream, project and sending domain may meet,
 * whatever its recipients: each rule that fits it apart from its recipient domain, up to the first
 * rule that fits it whoever the recipients are. What a whole campaign may leave by.
 */
export function possibleRoutes(
  routes: Pick<RoutesConfig, 'rules'>,
  message: Omit<RoutedMessage, 'recipientDomain'>,
): string[] {
  const names: string[] = [];
  for (const rule of routes.rules) {
    const { recipientDomain, ...rest } = rule.match;
    if (!fits(rest, { ...message, recipientDomain: '' })) continue;
    if (rule.routes[0] !== undefined && !names.includes(rule.routes[0])) names.push(rule.routes[0]);
    if (recipientDomain === undefined) break;
  }
  return names;
}

/**
 * The ordered route names of the first rule whose match fits the message (an absent key fits
 * anything). A checked routes file ends with a rule that fits every message; with none fitting
 * (rules not checked by parseRoutes) the answer is an empty list.
 */
export function chooseRoute(routes: Pick<RoutesConfig, 'rules'>, message: RoutedMessage): string[] {
  return routes.rules.find((rule) => fits(rule.match, message))?.routes ?? [];
}
