import type { ReactNode } from 'react';
import { SecretOnce } from '../../components/SecretOnce.tsx';

/** An endpoint's signing secret, shown the one time the API returns it (on create and on rotate). */
export function SigningSecret({ what, secret }: { what: ReactNode; secret: string }) {
  return (
    <SecretOnce
      notice={
        <>Copy the signing secret of {what} now: it is shown only this once and cannot be shown again.</>
      }
      label="Signing secret"
      secret={secret}
    />
  );
}
