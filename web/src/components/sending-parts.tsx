import { type ReactNode, useId } from 'react';
import { Notice } from './Alert.tsx';
import { CopyButton } from './CopyButton.tsx';
import { DialogClose } from './Dialog.tsx';
import { formatNumber } from './format.ts';

/** Pieces the sending screens (domains, SMTP, webhooks, suppressions, inbound) share. */

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

/** A secret shown the one time the API returns it, with a copy button and a way to close. */
export function SecretOnce({ what, secret }: { what: ReactNode; secret: string }) {
  return (
    <div className="secret">
      <Notice tone="warning">
        Copy the signing secret of {what} now: it is shown only this once and cannot be shown again.
      </Notice>
      <CopyField label="Signing secret" value={secret} />
      <div className="actions">
        <DialogClose asChild>
          <button type="button" className="btn primary">
            I have copied it
          </button>
        </DialogClose>
      </div>
    </div>
  );
}

/** Newer and older pages of a list held in the screen's state. */
export function PageButtons({
  page,
  total,
  perPage,
  noun,
  onPage,
}: {
  page: number;
  total: number;
  perPage: number;
  noun: [string, string];
  onPage(page: number): void;
}) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  return (
    <nav className="pager" aria-label="Pages">
      <p>
        {formatNumber(total)} {total === 1 ? noun[0] : noun[1]} · page {page} of {pages}
      </p>
      <div className="actions">
        {page > 1 && (
          <button type="button" className="btn" onClick={() => onPage(page - 1)}>
            Newer
          </button>
        )}
        {page < pages && (
          <button type="button" className="btn" onClick={() => onPage(page + 1)}>
            Older
          </button>
        )}
      </div>
    </nav>
  );
}

/** A titled card section, named by its heading for screen readers. */
export function Section({ title, wide, children }: { title: string; wide?: boolean; children: ReactNode }) {
  const id = useId();
  return (
    <section className={wide ? 'card wide' : 'card'} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}
