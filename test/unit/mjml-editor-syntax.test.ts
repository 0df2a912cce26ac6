import { ensureSyntaxTree, getIndentation, indentOnInput, syntaxTree } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import type { SyntaxNode } from '@lezer/common';
import { describe, expect, it } from 'vitest';
import { STARTERS } from '../../src/domain/templates/starters.ts';
import { mjmlSyntax } from '../../web/src/features/templates/mjml-syntax.ts';

/**
 * The dashboard's MJML editor (issue 30, item 4): self-closing MJML elements are not taken for open
 * ones, so `</` closes the element really open and Enter indents as the source does; the close tag
 * of an element with a hyphen in its name is indented as its open tag once typed.
 */

/** The state with its whole source parsed: a state keeps the tree it was made with, so settle it. */
function parsed(state: EditorState): EditorState {
  if (!ensureSyntaxTree(state, state.doc.length, 5_000)) throw new Error('the source was not parsed');
  const settled = state.update({}).state;
  expect(syntaxTree(settled).length).toBe(settled.doc.length);
  return settled;
}

const stateOf = (doc: string) => parsed(EditorState.create({ doc, extensions: [mjmlSyntax()] }));

/** The names of the elements open at `pos`, innermost first: what `</` would close. */
function openElements(state: EditorState, pos: number): string[] {
  const names: string[] = [];
  for (let node: SyntaxNode | null = syntaxTree(state).resolveInner(pos, -1); node; node = node.parent) {
    if (node.name !== 'Element' || node.firstChild?.name === 'SelfClosingTag') continue;
    const close = node.lastChild?.name === 'CloseTag' ? node.lastChild : null;
    const tag = node.firstChild?.getChild('TagName');
    if (tag && (!close || pos <= close.from)) names.push(state.sliceDoc(tag.from, tag.to));
  }
  return names;
}

/** The indentation Enter gives the line after line `n` (the line's own when the language has none). */
function indentAfterLine(state: EditorState, n: number): number {
  const line = state.doc.line(n);
  const next = parsed(state.update({ changes: { from: line.to, insert: '\n' } }).state);
  return getIndentation(next, line.to + 1) ?? /^\s*/.exec(line.text)?.[0].length ?? 0;
}

const SOURCE = [
  '<mjml>',
  '  <mj-head>',
  '    <mj-attributes>',
  '      <mj-all font-family="Arial" />',
  '      <mj-class name="muted" color="#555" />',
  '    </mj-attributes>',
  '  </mj-head>',
  '  <mj-body>',
  '    <mj-section>',
  '      <mj-column>',
  '        <mj-image src="https://example.com/logo.png" alt="" />',
  '        <mj-text>Hello {{ first_name }}</mj-text>',
  '        <mj-divider border-color="#ccc" />',
  '        <mj-spacer height="20px" />',
  '      </mj-column>',
  '    </mj-section>',
  '  </mj-body>',
  '</mjml>',
].join('\n');

describe('the MJML editor syntax', () => {
  it('leaves no element open after </mjml>, whatever self-closing elements came before', () => {
    const state = stateOf(`${SOURCE}\n`);
    expect(openElements(state, state.doc.length)).toEqual([]);
    expect(indentAfterLine(state, state.doc.lines - 1)).toBe(0);
  });

  it('closes the element really open after a self-closing one', () => {
    const state = stateOf(SOURCE);
    // the end of `<mj-spacer height="20px" />`: the column, section, body and document are open
    expect(openElements(state, state.doc.line(14).to)).toEqual([
      'mj-column',
      'mj-section',
      'mj-body',
      'mjml',
    ]);
    expect(openElements(state, state.doc.line(5).to)).toEqual(['mj-attributes', 'mj-head', 'mjml']);
  });

  it('indents a new line as deep as the self-closing element before it, one level inside an open one', () => {
    const state = stateOf(SOURCE);
    expect(indentAfterLine(state, 4)).toBe(6); // after <mj-all />
    expect(indentAfterLine(state, 11)).toBe(8); // after <mj-image />
    expect(indentAfterLine(state, 13)).toBe(8); // after <mj-divider />
    expect(indentAfterLine(state, 14)).toBe(8); // after <mj-spacer />
    expect(indentAfterLine(state, 10)).toBe(8); // inside <mj-column>
    expect(indentAfterLine(state, 15)).toBe(6); // after </mj-column>
  });

  it('reads every starter with nothing left open at its end', () => {
    for (const starter of STARTERS) {
      const state = stateOf(`${starter.mjml.trimEnd()}\n`);
      expect(openElements(state, state.doc.length), starter.key).toEqual([]);
      expect(indentAfterLine(state, state.doc.lines - 1), starter.key).toBe(0);
    }
  });

  it('indents the close tag of an MJML element as its open tag, once typed or completed', () => {
    const open = [
      '<mjml>',
      '  <mj-body>',
      '    <mj-section>',
      '      <mj-column>',
      '        <mj-divider />',
      '        ',
    ];
    const start = () => {
      const doc = open.join('\n');
      return parsed(
        EditorState.create({
          doc,
          selection: { anchor: doc.length },
          extensions: [mjmlSyntax(), indentOnInput()],
        }),
      );
    };
    /** Inserts at the cursor as typing (or a completion) does, indentation rules included. */
    const input = (state: EditorState, text: string, userEvent: string) => {
      const at = state.selection.main.head;
      return parsed(
        state.update({
          changes: { from: at, insert: text },
          selection: { anchor: at + text.length },
          userEvent,
        }).state,
      );
    };
    const lastLine = (state: EditorState) => state.doc.line(state.doc.lines).text;

    // `</` typed, then completed to the element open there
    let state = input(input(start(), '<', 'input.type'), '/', 'input.type');
    state = input(state, 'mj-column>', 'input.complete');
    expect(lastLine(state)).toBe('      </mj-column>');

    // typed key by key
    state = start();
    for (const key of '</mj-column>') state = input(state, key, 'input.type');
    expect(lastLine(state)).toBe('      </mj-column>');
  });
});
