import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseSync } from 'vite';
import { describe, expect, it } from 'vitest';
import { inPeoplesWords } from '../../web/src/api/words.ts';

/**
 * Words for people (issue 48, build item 8): no screen of the dashboard shows a backtick or an API
 * path (`/v1/...`). Every .ts and .tsx file under web/src is parsed (by the same parser the web
 * build uses) and every piece of text that can reach the screen is read: JSX text, string
 * literals and the text of template literals, in JSX, in props and in plain code (a message built
 * in a function, a constant shown later). Left out, because they are never shown as text:
 * - code examples, inside a <pre> element (told apart by the tree, not by their content);
 * - types (a literal type, an interface), module names (imports), object keys;
 * - the address of a request: the arguments of api.get/post/..., send, postCsv and fetch;
 * - the targets of links and images (href, src), which are addresses, not words;
 * - regular expressions (the dashboard's own translation of the API's words uses them).
 */

const ROOT = path.resolve(import.meta.dirname, '../../web/src');

type Node = { type: string; start: number; end: number; [key: string]: unknown };

/** Keys under which a node holds a type, never a value. */
const TYPE_KEYS = new Set([
  'typeAnnotation',
  'typeArguments',
  'typeParameters',
  'returnType',
  'superTypeArguments',
]);
/** Declarations that hold only types. */
const TYPE_NODES = new Set([
  'TSTypeAliasDeclaration',
  'TSInterfaceDeclaration',
  'TSDeclareFunction',
  'TSModuleDeclaration',
  'TSImportType',
]);
/** Attributes whose value is an address, not words. */
const ADDRESS_ATTRIBUTES = new Set(['href', 'src', 'to']);
/** The client's request functions (web/src/api/client.ts) and the browser's. */
const REQUEST_FUNCTIONS = new Set(['fetch', 'send', 'postCsv']);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return files(full);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

const isNode = (v: unknown): v is Node =>
  typeof v === 'object' && v !== null && typeof (v as Node).type === 'string';

function jsxName(el: Node): string {
  const name = (el.openingElement as Node | undefined)?.name as Node | undefined;
  return name?.type === 'JSXIdentifier' ? String(name.name) : '';
}

/** Whether a call sends a request (its arguments are addresses). */
function isRequest(call: Node): boolean {
  const callee = call.callee as Node;
  if (callee.type === 'Identifier') return REQUEST_FUNCTIONS.has(String(callee.name));
  if (callee.type === 'MemberExpression') {
    const object = callee.object as Node;
    return object.type === 'Identifier' && object.name === 'api';
  }
  return false;
}

interface Text {
  file: string;
  line: number;
  text: string;
}

/** Every piece of text in a file that can be shown, with its line. */
function shownTexts(file: string, source: string): Text[] {
  const parsed = parseSync(file, source, { lang: file.endsWith('.tsx') ? 'tsx' : 'ts' });
  if (parsed.errors.length) throw new Error(`${file}: ${parsed.errors[0]?.message}`);
  const out: Text[] = [];
  const lineOf = (at: number) => source.slice(0, at).split('\n').length;
  const add = (node: Node, text: string) => out.push({ file, line: lineOf(node.start), text });
  const visit = (node: Node): void => {
    if (TYPE_NODES.has(node.type)) return;
    switch (node.type) {
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
      case 'ImportExpression':
        return;
      case 'JSXElement':
        if (jsxName(node) === 'pre') return;
        break;
      case 'JSXAttribute': {
        const name = node.name as Node;
        if (name.type === 'JSXIdentifier' && ADDRESS_ATTRIBUTES.has(String(name.name))) return;
        break;
      }
      case 'CallExpression':
        if (isRequest(node)) {
          visit(node.callee as Node);
          return;
        }
        break;
      case 'JSXText':
        add(node, String(node.value));
        return;
      case 'Literal':
        if (typeof node.value === 'string') add(node, node.value);
        return;
      case 'TemplateElement':
        add(node, String((node.value as { cooked: string | null }).cooked ?? ''));
        return;
      case 'Property':
        if (!node.computed) {
          visit(node.value as Node);
          return;
        }
        break;
      case 'ExportNamedDeclaration':
        if (node.source) return;
        break;
    }
    for (const [key, value] of Object.entries(node)) {
      if (TYPE_KEYS.has(key)) continue;
      if (Array.isArray(value)) for (const v of value) isNode(v) && visit(v);
      else if (isNode(value)) visit(value);
    }
  };
  visit(parsed.program as unknown as Node);
  return out;
}

/** What a person must not read on a screen: a backtick, or a path of the API. */
const DEVELOPER_WORDS = /`|\/v1\//;

describe('the dashboard speaks to people', () => {
  it('shows no backtick and no API path (/v1/...) in any screen', () => {
    const found = files(ROOT).flatMap((file) =>
      shownTexts(path.relative(ROOT, file), readFileSync(file, 'utf8'))
        .filter((t) => DEVELOPER_WORDS.test(t.text))
        .map((t) => `web/src/${t.file}:${t.line}: ${JSON.stringify(t.text.trim().slice(0, 120))}`),
    );
    expect(found).toEqual([]);
  });

  it('reads what it must: text, props, messages built in code; not code examples or requests', () => {
    const source = [
      "import x from '/v1/nothing';",
      "type T = '`typed`';",
      "const message = 'Field `url` is wrong';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a template literal, for the parser
      'const built = (id: string) => `see POST /v1/things/${id}`;',
      "const answer = () => api.get('/v1/emails/{id}', { path: { id: '1' } });",
      "const el = <p title='a `title`'>Add it (POST /v1/domains)<pre>curl /v1/emails -d '`x`'</pre></p>;",
      "const link = <a href='/v1/openapi.json'>the reference</a>;",
    ].join('\n');
    const texts = shownTexts('x.tsx', source)
      .filter((t) => DEVELOPER_WORDS.test(t.text))
      .map((t) => `${t.line}: ${t.text}`);
    expect(texts).toEqual([
      '3: Field `url` is wrong',
      '4: see POST /v1/things/',
      '6: a `title`',
      '6: Add it (POST /v1/domains)',
    ]);
  });
});

describe("the API's words, as the dashboard shows them", () => {
  it('names a field in words and leaves the request out', () => {
    // the server's own messages, as issue 48 found them on the screens
    const shown = [
      'Field `events` must have at least 1 item(s)',
      '`url` must use https',
      '`from` must be an address on a verified domain (none verified yet: add one in Domains (POST /v1/domains), or send from hello@posthorn.localhost on the shared domain).',
      'Campaign "Spring" is paused: resume it with POST /v1/campaigns/c1/resume',
      '`starter` must be one of welcome, receipt; GET /v1/templates/starters lists them',
      '`steps[2].template_id`: template t1 has no published version yet: publish it in Templates (POST /v1/templates/t1/publish)',
      'On this server the operator moves a workspace to another plan with `npx posthorn admin plan <workspace> unlimited`',
      '`variables[5]`.default must be a number',
      '`mjml` uses `company_name`, which is not declared: add it to `variables` or fix the name',
    ].map(inPeoplesWords);
    expect(shown).toEqual([
      'Events must have at least 1 item(s)',
      'URL must use https',
      'From must be an address on a verified domain (none verified yet: add one in Domains, or send from hello@posthorn.localhost on the shared domain).',
      'Campaign "Spring" is paused: resume it on its page',
      'Starter must be one of welcome, receipt',
      'Template: template t1 has no published version yet: publish it in Templates',
      'On this server the operator moves a workspace to another plan with “npx posthorn admin plan <workspace> unlimited”',
      'Default must be a number',
      'MJML uses “company_name”, which is not declared: add it to “variables” or fix the name',
    ]);
    for (const text of shown) expect(text).not.toMatch(DEVELOPER_WORDS);
  });
});
