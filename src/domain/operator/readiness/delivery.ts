import type { Config } from '../../../config.ts';
import { MxResolver } from '../../../delivery/direct/mx.ts';
import { reverseDnsProblems } from '../../../delivery/direct/source-check.ts';
import { type RouteToCheck, routesToCheck } from '../../../delivery/routes/readiness-targets.ts';
import { smtpGreeting } from './net.ts';
import { type Check, fail, pass, reason, skip, warn } from './types.ts';

/**
 * The way out: some route takes mail off this server; each relay takes Posthorn's login; a direct
 * route can open connections to port 25 (tried on POSTHORN_PORT25_PROBE) from addresses whose
 * reverse DNS is confirmed; and the bulk-sender gate is on for campaigns and flows.
 */

const leaves = (r: RouteToCheck) => r.type !== 'mailbox' && r.type !== 'simulated';

function outboundCheck(routes: RouteToCheck[]): Check {
  const title = 'Mail leaves this server';
  const out = routes.filter(leaves);
  if (out.length > 0)
    return pass(
      'outbound_route',
      title,
      `By ${out.map((r) => `the route ${r.name} (${r.type}: ${r.target})`).join(', ')}`,
    );
  return fail(
    'outbound_route',
    title,
    'Every message goes to the dev mailbox: nothing reaches real recipients',
    "Set POSTHORN_SMTP_RELAY to your provider's SMTP relay (smtp://user:password@host:587), or POSTHORN_ROUTES to a routes file with a direct route, and restart Posthorn.",
  );
}

async function relayCheck(route: RouteToCheck): Promise<Check> {
  const id = `relay_${route.name}`;
  const title = `Relay ${route.name} accepts the login`;
  try {
    await route.login?.();
    return pass(id, title, `${route.target} greeted and took the login`);
  } catch (err) {
    const setting =
      route.name === 'default' ? 'POSTHORN_SMTP_RELAY' : `the route ${route.name} of POSTHORN_ROUTES`;
    return fail(
      id,
      title,
      `${route.target} refused Posthorn: ${reason(err)}`,
      `Check the host, port, user name and password in ${setting} against what your provider gives, and that this server may connect to it.`,
    );
  }
}

async function port25Check(config: Config): Promise<Check> {
  const [host, port = '25'] = config.port25Probe.split(/:(?=\d+$)/);
  const title = 'Outbound port 25 open';
  try {
    const greeting = await smtpGreeting(host, Number(port), config.dnsServers);
    return pass('port_25', title, `${host}:${port} answered: ${greeting.slice(0, 120)}`);
  } catch (err) {
    return fail(
      'port_25',
      title,
      `No connection to the mail server ${host}:${port} (POSTHORN_PORT25_PROBE): ${reason(err)}`,
      'Most hosting providers block outbound port 25 until asked: ask yours to open it for this server, or send through a relay (POSTHORN_SMTP_RELAY or an smtp route in POSTHORN_ROUTES).',
    );
  }
}

async function reverseDnsCheck(config: Config, route: RouteToCheck): Promise<Check> {
  const id = `reverse_dns_${route.name}`;
  const title = `Reverse DNS of route ${route.name}`;
  if (route.sourceAddresses.length === 0)
    return warn(
      id,
      title,
      'The route names no source address: connections leave from whichever address the system picks, whose reverse DNS cannot be checked',
      "List the addresses mail leaves from in the route (source_addresses, each with its address and ehlo name) and have each address's reverse DNS (PTR) name that host.",
    );
  const problems = await reverseDnsProblems(
    route.name,
    route.sourceAddresses,
    new MxResolver({ servers: config.dnsServers }),
  );
  const addresses = route.sourceAddresses.map((s) => `${s.address} (${s.ehlo})`).join(', ');
  if (problems.length === 0) return pass(id, title, `Forward-confirmed for ${addresses}`);
  return fail(
    id,
    title,
    problems.join('; '),
    "Ask the provider of each address to set its reverse DNS (PTR) to the route's ehlo name, and publish an A (or AAAA) record of that name pointing back to the address.",
  );
}

function gateCheck(config: Config, routes: RouteToCheck[]): Check {
  const title = 'Bulk-sender gate';
  if (!routes.some(leaves))
    return skip('bulk_gate', title, 'Nothing leaves this server yet: the gate applies once a route does');
  if (config.bulkGate === 'off')
    return warn(
      'bulk_gate',
      title,
      'POSTHORN_BULK_GATE is off: campaigns and flows send without the checks Gmail and Yahoo make of bulk senders',
      'Set POSTHORN_BULK_GATE=enforce (the default) so each campaign and flow is checked first: DKIM, SPF and DMARC aligned, reverse DNS, one-click unsubscribe.',
    );
  return pass(
    'bulk_gate',
    title,
    'Each campaign and flow is checked before it sends: DKIM, SPF and DMARC aligned with its domain, reverse DNS of the sending addresses, one-click unsubscribe',
  );
}

export async function deliveryChecks(config: Config): Promise<Check[]> {
  const routes = routesToCheck(config);
  const checks: Check[] = [outboundCheck(routes)];
  for (const route of routes) {
    if (route.type === 'smtp') checks.push(await relayCheck(route));
    if (route.type === 'ses')
      checks.push(
        skip(
          `relay_${route.name}`,
          `Amazon SES route ${route.name}`,
          'Its credentials are checked when it first sends',
        ),
      );
  }
  const direct = routes.filter((r) => r.type === 'direct');
  if (direct.length > 0) checks.push(await port25Check(config));
  for (const route of direct) checks.push(await reverseDnsCheck(config, route));
  checks.push(gateCheck(config, routes));
  return checks;
}
