import type { Component, Editor } from 'grapesjs';
import { protect, RAW_MJML, tidy } from './grapes-setup.ts';

/** Parses MJML as XML (as the block editor does); null when it is not well-formed XML. */
export function parseMjml(mjml: string): Element | null {
  const doc = new DOMParser().parseFromString(protect(mjml), 'text/xml');
  if (doc.getElementsByTagName('parsererror').length > 0) return null;
  return doc.documentElement;
}

/** An attribute's value with whitespace squeezed; a style without its last `;` and spaces. */
function attributeValue(a: Attr): string {
  const v = a.value.replace(/\s+/g, ' ').trim();
  return a.name === 'style' ? v.replace(/\s*([:;])\s*/g, '$1').replace(/;$/, '') : v;
}

/** One node as a canonical string: attributes sorted, runs of whitespace as one space. */
export function canonical(node: Node): string {
  if (node.nodeType === Node.TEXT_NODE || node.nodeType === Node.CDATA_SECTION_NODE)
    return (node.textContent ?? '').replace(/\s+/g, ' ').trim();
  if (node.nodeType === Node.COMMENT_NODE) return `<!--${(node.textContent ?? '').trim()}-->`;
  if (node.nodeType !== Node.ELEMENT_NODE) return '';
  const el = node as Element;
  const attrs = [...el.attributes]
    .map((a) => `${a.name}="${attributeValue(a)}"`)
    .sort()
    .join(' ');
  const inner = [...el.childNodes].map(canonical).filter(Boolean).join('');
  return `<${el.tagName}${attrs ? ` ${attrs}` : ''}>${inner}</${el.tagName}>`;
}

const CONTAINERS = new Set(['mjml', 'mj-body', 'mj-wrapper', 'mj-section', 'mj-column', 'mj-group']);

function canonicalOf(component: Component): string {
  const el = parseMjml(tidy(component.toHTML()));
  return el ? canonical(el) : '';
}

function toRaw(component: Component, source: Element) {
  const xml = new XMLSerializer().serializeToString(source).replace(/ xmlns="[^"]*"/, '');
  component.replaceWith({ type: RAW_MJML, source: tidy(xml) });
}

function elementChildren(el: Element): Element[] {
  return [...el.children];
}

/** Makes `component` write `source` again: the parts it cannot keep become raw MJML blocks. */
function repair(component: Component, source: Element): boolean {
  const want = canonical(source);
  if (canonicalOf(component) === want) return true;
  const children = elementChildren(source);
  const parts = component.components().models.filter((c) => c.get('type') !== 'textnode');
  if (CONTAINERS.has(source.tagName) && parts.length === children.length) {
    parts.forEach((part, i) => {
      if (!repair(part, children[i])) toRaw(part, children[i]);
    });
    if (canonicalOf(component) === want) return true;
  }
  return false;
}

function rawCount(component: Component): number {
  if (component.get('type') === RAW_MJML) return 1;
  return component.components().models.reduce((n, c) => n + rawCount(c), 0);
}

/**
 * Loads `mjml` into the editor so that writing it back gives the same MJML tree: what the block
 * editor cannot represent is shown as a raw MJML block, never dropped. Returns the number of raw
 * blocks made, or null when the document cannot be shown at all (the code view stays).
 */
export function keepWholeDocument(editor: Editor, mjml: string): number | null {
  const source = parseMjml(mjml);
  if (source?.tagName !== 'mjml') return null;
  const root = editor
    .getWrapper()
    ?.components()
    .models.find((c) => c.get('type') === 'mjml');
  if (!root) return null;
  const before = rawCount(root);
  if (!repair(root, source)) return null;
  return rawCount(root) - before;
}
