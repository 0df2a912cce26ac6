/** Who fetched a tracking link: a person (or a proxy acting when a person opens) or a machine. */
export type UserAgentClass = 'human' | 'machine';

/**
 * Proxies that fetch on the reader's behalf when the reader opens the message: they count as a
 * person. Gmail's and Yahoo's image proxies fetch when the message is displayed.
 */
const READER_PROXIES = [/GoogleImageProxy/i, /YahooMailProxy/i];

/**
 * Fetchers that are never a person: link scanners of mail security gateways (Microsoft Safe Links
 * and its Office discovery probes, Barracuda, Mimecast, Proofpoint, Symantec/MessageLabs, Cisco,
 * Sophos, Trend Micro, Forcepoint, Zscaler...), crawlers and previewers, headless browsers and
 * programming-language HTTP clients.
 */
const MACHINES = [
  /safelinks|safe ?links|bingpreview|existence discovery|protocol discovery/i,
  /barracuda|mimecast|proofpoint|ppops|urldefense|messagelabs|symantec|ironport|cisco|sophos/i,
  /trend ?micro|forcepoint|zscaler|fortinet|fortiguard|paloalto|checkpoint|avanan|abnormal/i,
  /bot\b|bot\/|crawl|spider|slurp|preview|scanner|monitor|validator|headlesschrome|phantomjs/i,
  /^(curl|wget|python|java|go-http-client|okhttp|axios|node-fetch|undici|libwww|apache-httpclient|ruby|php)/i,
];

/**
 * Apple Mail Privacy Protection fetches every image of every message through Apple's proxy as
 * soon as it arrives, whether or not anyone reads it, with this bare user agent.
 */
const APPLE_PRIVACY_PROXY = /^Mozilla\/5\.0$/;

/** Fetches this soon after the message left are machines: no person opens mail that fast. */
export const MACHINE_WINDOW_MS = 2_000;

/**
 * Classifies an open or a click: HEAD requests, missing user agents, Apple's privacy proxy, link
 * scanners and anything within MACHINE_WINDOW_MS of sending are machines; the rest (including
 * Gmail's and Yahoo's image proxies) are people. `sinceSentMs` is unknown (null) when the message
 * has no send time yet.
 */
export function userAgentClass(
  userAgent: string | undefined | null,
  method: string,
  sinceSentMs: number | null = null,
): UserAgentClass {
  if (method.toUpperCase() !== 'GET') return 'machine';
  if (sinceSentMs !== null && sinceSentMs < MACHINE_WINDOW_MS) return 'machine';
  const ua = (userAgent ?? '').trim();
  if (ua === '' || APPLE_PRIVACY_PROXY.test(ua)) return 'machine';
  if (READER_PROXIES.some((p) => p.test(ua))) return 'human';
  return MACHINES.some((p) => p.test(ua)) ? 'machine' : 'human';
}
