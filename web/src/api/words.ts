/**
 * The API's words turned into the dashboard's (issue 48, build item 8). The server's messages are
 * written for every client of the API: they name fields in backquotes ("`url` must use https") and
 * the requests that do a thing ("add one in Domains (POST /v1/domains)"). A person in the
 * dashboard does those things with its screens, so an error, a hint or a reason the server wrote
 * is shown without them: a field by its name in words, a request by the page that makes it.
 */

/**
 * Written as regular expressions only (a path of the API in them is a pattern, never shown):
 * METHOD is (GET|POST|PUT|PATCH|DELETE), a path runs to the end of its phrase with the JSON that
 * may follow it (`/v1/webhooks/x {"enabled": true}`).
 */
const RULES: [RegExp, string][] = [
  // "add one in Domains (POST /v1/domains)", "(GET /v1/campaigns/x/checklist shows them)": the aside goes
  [/\s*\([^()]*\/v1\/[^()]*\)/g, ''],
  // "; GET /v1/templates/starters lists them": said by the screen itself
  [/[;,]\s*(?:(?:GET|POST|PUT|PATCH|DELETE) )?\/v1\/[^\s,;)]* (?:lists|shows|gives) [^.;]*/g, ''],
  // "resume it with POST /v1/campaigns/x/resume": the page of the thing does it
  [
    /\b(?:with|through|by|at) (?:(?:GET|POST|PUT|PATCH|DELETE) )?\/v1\/[^\s,;)]*(?: \{[^}]*\})?/g,
    'on its page',
  ],
  [/(?:(?:GET|POST|PUT|PATCH|DELETE) )?\/v1\/[^\s,;)]*(?: \{[^}]*\})?/g, 'the API'],
  // "resumes it with POST /v1/breaker/resume and a `reason`"
  [/ and a `reason`/g, ', giving a reason'],
];

const WORDS: Record<string, string> = {
  url: 'URL',
  id: 'ID',
  html: 'HTML',
  mjml: 'MJML',
  csv: 'CSV',
  api: 'API',
};

/** A field's name in words: `template_id` is "template", `steps[2].subject` is "subject", `reply_to` "reply to". */
function fieldInWords(name: string): string {
  const last =
    name
      .replace(/\[\d+\]/g, '')
      .split('.')
      .filter(Boolean)
      .pop() ?? name;
  const words = last.replace(/_id$/, '').split(/[_-]+/).filter(Boolean);
  return words.map((w) => WORDS[w.toLowerCase()] ?? w).join(' ') || name;
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The server's text as the dashboard shows it: no backquotes, no API paths. */
export function inPeoplesWords(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  // "Field `events` must ...", "`url` must ...", "`variables[5]`.default must ...": the field at
  // fault leads the sentence, said by its name; any other word in backquotes (a name the person
  // gave, a command, a value) is quoted as a person quotes
  out = out.replace(/^(?:Field )?`([\w.[\]-]+)`((?:\.\w+)*)/, (_, name: string, rest: string) =>
    capitalized(fieldInWords(name + rest)),
  );
  out = out.replace(/`([^`]*)`/g, '“$1”').replace(/`/g, '');
  out = out.replace(/ {2,}/g, ' ').replace(/\s+([.,;])/g, '$1');
  return out;
}

/** The same for whatever a screen is handed to show: a string of the server's in people's words, anything else as it is. */
export function shownInPeoplesWords<T>(value: T): T {
  return (typeof value === 'string' ? inPeoplesWords(value) : value) as T;
}
