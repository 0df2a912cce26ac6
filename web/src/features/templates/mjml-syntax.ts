import { html, htmlLanguage } from '@codemirror/lang-html';
import { liquid } from '@codemirror/lang-liquid';
import { LanguageSupport } from '@codemirror/language';

/**
 * A close tag is indented again once its `>` is typed or completed. HTML's own rule wants a name of
 * letters and digits then one more character, so the close tag of an MJML element (`</mj-column>`:
 * a hyphen in the name), typed or completed, kept the indentation of the element's content.
 */
const closeTagIndent = htmlLanguage.data.of({ indentOnInput: /^\s*<\/[\w-]+>$/ });

/**
 * MJML as the code editor reads it: HTML with Liquid inside, where `<mj-image />` closes itself.
 * MJML writes its empty elements (mj-image, mj-divider, mj-spacer, mj-all, mj-class, mj-font…) with
 * `/>`; plain HTML parsing takes `/>` for `>` on any element that is not an HTML void element, so
 * each of them stayed open: typing `</` after `</mjml>` closed an `mj-divider`, and every line after
 * one was indented a level deeper. With self-closing tags read as closed, the close-tag completion
 * and the indentation on Enter follow the elements really open.
 */
export function mjmlSyntax(): LanguageSupport {
  const mjml = liquid({ base: html({ selfClosingTags: true }) });
  return new LanguageSupport(mjml.language, [mjml.support, closeTagIndent]);
}
