import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { type Diagnostic, lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorView } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';
import { mjmlSyntax } from './mjml-syntax.ts';

/** What is wrong with the source, at a line (1-based), as the API said it. */
export interface SourceError {
  line: number;
  message: string;
}

/** Token colours with at least 4.5:1 contrast on white and on the active line's tint. */
const readable = HighlightStyle.define([
  { tag: [tags.tagName, tags.angleBracket], color: '#0b4f9c' },
  { tag: tags.attributeName, color: '#6b2fa3' },
  { tag: [tags.attributeValue, tags.string], color: '#0d5d1a' },
  { tag: tags.comment, color: '#57606a', fontStyle: 'italic' },
  { tag: [tags.keyword, tags.controlKeyword, tags.operatorKeyword], color: '#9a3412' },
  { tag: [tags.variableName, tags.propertyName, tags.function(tags.variableName)], color: '#7a2e0e' },
  { tag: [tags.number, tags.bool, tags.atom], color: '#0f5b6e' },
  { tag: [tags.punctuation, tags.bracket, tags.separator, tags.operator], color: '#1f2328' },
  { tag: tags.invalid, color: '#b42318' },
]);

/**
 * The MJML source in CodeMirror: HTML-like highlighting with Liquid inside (tags, filters,
 * `{{ }}`), `<mj-image />` read as closed (mjml-syntax.ts), a lint gutter that marks the line an error names. Uncontrolled: `initial` seeds it,
 * `onChange` hears every edit.
 */
export function MjmlCode({
  initial,
  onChange,
  error,
  label,
}: {
  initial: string;
  onChange(source: string): void;
  error: SourceError | null;
  label: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  // biome-ignore lint/correctness/useExhaustiveDependencies: the editor is made once; `initial` only seeds it
  useEffect(() => {
    const editor = new EditorView({
      doc: initial,
      parent: host.current as HTMLDivElement,
      extensions: [
        basicSetup,
        mjmlSyntax(),
        syntaxHighlighting(readable),
        lintGutter(),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-label': label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) changed.current(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    return () => editor.destroy();
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (!editor) return;
    const diagnostics: Diagnostic[] = [];
    if (error && error.line >= 1 && error.line <= editor.state.doc.lines) {
      const line = editor.state.doc.line(error.line);
      diagnostics.push({ from: line.from, to: line.to, severity: 'error', message: error.message });
    }
    editor.dispatch(setDiagnostics(editor.state, diagnostics));
  }, [error]);

  return <div className="code-editor" ref={host} />;
}
