import type { Config } from '../../../config.ts';
import { httpGet, smtpStartTls, tlsCertificate } from './net.ts';
import { type Check, fail, isLocalName, pass, reason, skip, unreachable, warn } from './types.ts';

/** A certificate this close to its end is a warning: renewal has failed or is not set up. */
const EXPIRY_WARNING_DAYS = 14;
const DAY_MS = 86_400_000;

/** The public URL and, when it differs, the dashboard's. */
function webUrls(config: Pick<Config, 'publicUrl' | 'appUrl'>): { setting: string; url: URL }[] {
  const urls = [{ setting: 'POSTHORN_PUBLIC_URL', url: new URL(config.publicUrl) }];
  if (new URL(config.appUrl).origin !== urls[0].url.origin)
    urls.push({ setting: 'POSTHORN_APP_URL', url: new URL(config.appUrl) });
  return urls;
}

/** The server answers at its public URL, from where this server stands, through its resolvers. */
async function reachable(setting: string, url: URL, servers: string[]): Promise<Check> {
  const id = setting === 'POSTHORN_PUBLIC_URL' ? 'public_url' : 'app_url';
  const title = `${setting === 'POSTHORN_PUBLIC_URL' ? 'Public URL' : 'Dashboard URL'} reachable`;
  if (isLocalName(url.hostname))
    return fail(
      id,
      title,
      `${setting} is ${url.origin}, an address only this machine reaches: links in mail, unsubscribe pages and webhooks would point nowhere`,
      `Set ${setting} to the https address people reach this server at (for example https://mail.example.com), publish its DNS name, and restart Posthorn.`,
    );
  const health = new URL('healthz', url.origin + url.pathname.replace(/\/?$/, '/'));
  try {
    const answer = await httpGet(health.href, servers);
    if (answer.status === 200 && answer.body.includes('"ok"'))
      return pass(id, title, `${health.href} answered 200`);
    return fail(
      id,
      title,
      `${health.href} answered ${answer.status}, not Posthorn's health answer`,
      `Make the proxy in front of Posthorn pass every path of ${url.origin} to its port (${setting} must lead to this server).`,
    );
  } catch (err) {
    return fail(
      id,
      title,
      `${health.href} could not be reached: ${reason(err)}`,
      `Publish an A (or AAAA) record for ${url.hostname} with this server's public address, and make sure its port ${url.port || (url.protocol === 'https:' ? 443 : 80)} is open and served (by a proxy with a certificate, or by Posthorn).`,
    );
  }
}

/** The certificate the web host presents: valid for its name, trusted, not about to end. */
async function certificate(setting: string, url: URL, servers: string[]): Promise<Check> {
  const id = setting === 'POSTHORN_PUBLIC_URL' ? 'web_tls' : 'app_tls';
  const title = `TLS certificate of ${url.hostname}`;
  if (url.protocol !== 'https:')
    return fail(
      id,
      title,
      `${setting} is served over plain http: browsers mark the pages unsafe and mailbox providers require https for one-click unsubscribe`,
      `Put a proxy with a certificate in front of Posthorn (Caddy obtains one by itself; nginx with certbot works too) and set ${setting} to the https address.`,
    );
  if (isLocalName(url.hostname))
    return skip(id, title, `${url.hostname} is a local name: no certificate to check`);
  try {
    const cert = await tlsCertificate(url.hostname, Number(url.port) || 443, servers);
    const days = Math.floor((cert.validTo.getTime() - Date.now()) / DAY_MS);
    if (days < EXPIRY_WARNING_DAYS)
      return warn(
        id,
        title,
        `The certificate for ${url.hostname} ends in ${days} days (${cert.validTo.toISOString().slice(0, 10)})`,
        'Renew it, and check that its automatic renewal runs.',
      );
    return pass(
      id,
      title,
      `Valid for ${url.hostname}, issued by ${cert.issuer || 'an unnamed authority'}, until ${cert.validTo.toISOString().slice(0, 10)}`,
    );
  } catch (err) {
    if (unreachable(err))
      return fail(
        id,
        title,
        `No certificate could be checked for ${url.hostname}: ${reason(err)}`,
        `Publish an A (or AAAA) record for ${url.hostname} with this server's public address, and serve port ${url.port || 443} with a certificate for it.`,
      );
    return fail(
      id,
      title,
      `No trusted certificate for ${url.hostname}: ${reason(err)}`,
      `Give the proxy in front of Posthorn a certificate for ${url.hostname} from a public authority (Let's Encrypt, for example), including its intermediate certificates.`,
    );
  }
}

/** The certificate SMTP clients see at the submission host (POSTHORN_SMTP_HOST) after STARTTLS. */
export async function smtpTlsCheck(config: Config): Promise<Check> {
  const id = 'smtp_tls';
  const host = config.smtpHost;
  const title = `TLS certificate of ${host} (SMTP submission)`;
  if (config.smtpPort === 0)
    return skip(id, title, 'POSTHORN_SMTP_PORT is 0 (a port chosen at start): nothing to connect to');
  try {
    const cert = await smtpStartTls(host, config.smtpPort, config.dnsServers);
    const days = Math.floor((cert.validTo.getTime() - Date.now()) / DAY_MS);
    if (days < EXPIRY_WARNING_DAYS)
      return warn(
        id,
        title,
        `The certificate for ${host} ends in ${days} days`,
        'Renew it (POSTHORN_TLS_CERT) and restart Posthorn.',
      );
    return pass(
      id,
      title,
      `STARTTLS on port ${config.smtpPort} shows a certificate valid for ${host}, issued by ${cert.issuer || 'an unnamed authority'}, until ${cert.validTo.toISOString().slice(0, 10)}`,
    );
  } catch (err) {
    const message = reason(err);
    const refused = unreachable(err);
    return fail(
      id,
      title,
      refused
        ? `No SMTP submission server answers at ${host}:${config.smtpPort}: ${message}`
        : `The certificate at ${host}:${config.smtpPort} is not trusted for ${host}: ${message}`,
      refused
        ? `Publish an A record for ${host} with this server's public address and run the SMTP role (posthorn start or posthorn smtp) with its port open.`
        : `Set POSTHORN_TLS_CERT and POSTHORN_TLS_KEY to a certificate for ${host} from a public authority (the self-signed one made for development is refused by mail clients), and restart Posthorn.`,
    );
  }
}

/** Public URL reachable and its certificate (and the dashboard's, when it has its own address). */
export async function webChecks(config: Config): Promise<Check[]> {
  const checks: Check[] = [];
  for (const { setting, url } of webUrls(config)) {
    checks.push(await reachable(setting, url, config.dnsServers));
    checks.push(await certificate(setting, url, config.dnsServers));
  }
  return checks;
}
