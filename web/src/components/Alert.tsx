import type { ReactNode } from 'react';
import { errorText } from '../api/client.ts';

/** A failure, announced to screen readers as it appears. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="alert alert-error" role="alert">
      {errorText(error)}
    </p>
  );
}

/** A calm message: success, or something to know. */
export function Notice({
  children,
  tone = 'info',
}: {
  children: ReactNode;
  tone?: 'info' | 'success' | 'warning';
}) {
  return (
    <div className={`alert alert-${tone}`} role="status">
      {children}
    </div>
  );
}
