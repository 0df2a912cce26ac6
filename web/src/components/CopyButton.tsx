import { type ReactNode, useId, useState } from 'react';

async function copy(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Copies a value; says so where screen readers hear it. */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <>
      <button
        type="button"
        className="btn"
        onClick={async () => {
          setState((await copy(value)) ? 'copied' : 'failed');
          setTimeout(() => setState('idle'), 2500);
        }}
      >
        {state === 'copied' ? 'Copied' : label}
      </button>
      <span className="visually-hidden" aria-live="polite">
        {state === 'copied'
          ? 'Copied to the clipboard'
          : state === 'failed'
            ? 'Copy failed: select the text and copy it'
            : ''}
      </span>
    </>
  );
}

/** A read-only value with its copy button (named "Copy <label>" unless `copyLabel` says otherwise). */
export function CopyField({
  label,
  value,
  hint,
  copyLabel = `Copy ${label.toLowerCase()}`,
}: {
  label: string;
  value: string;
  hint?: ReactNode;
  copyLabel?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input id={id} readOnly value={value} onFocus={(e) => e.target.select()} spellCheck={false} />
        <CopyButton value={value} label={copyLabel} />
      </div>
      {hint && <p className="hint">{hint}</p>}
    </div>
  );
}
