import type { ReactNode } from 'react';
import { Notice } from './Alert.tsx';
import { CopyField } from './CopyButton.tsx';
import { CloseButton } from './Dialog.tsx';

/** A secret shown the one time the API returns it (a key, a signing secret), to copy before closing. */
export function SecretOnce({
  notice,
  label,
  secret,
  copyLabel,
}: {
  notice: ReactNode;
  label: string;
  secret: string;
  copyLabel?: string;
}) {
  return (
    <div className="secret">
      <Notice tone="warning">{notice}</Notice>
      <CopyField label={label} value={secret} copyLabel={copyLabel} />
      <div className="actions">
        <CloseButton label="I have copied it" className="btn primary" />
      </div>
    </div>
  );
}
