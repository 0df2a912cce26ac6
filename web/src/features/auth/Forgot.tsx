import { useMutation } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { auth } from '../../api/endpoints.ts';
import { Notice } from '../../components/Alert.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { EmailField } from './EmailField.tsx';
import { PublicPage } from './PublicPage.tsx';

/** Asks for a password-reset link (single use, valid for one hour); the answer never says whether the account exists. */
export default function Forgot() {
  const [email, setEmail] = useState('');
  const forgot = useMutation({ mutationFn: (address: string) => auth.forgotPassword(address) });
  return (
    <PublicPage title="Reset your password">
      {forgot.isSuccess ? (
        <Notice tone="success">
          If <strong>{forgot.variables}</strong> has an account, we emailed a link to set a new password. It
          works once, within one hour.
        </Notice>
      ) : (
        <ActionForm
          label="Request a password reset link"
          action={forgot}
          onSubmit={() => forgot.mutate(email.trim())}
          submit="Email me a link"
          pendingLabel="Sending…"
        >
          <p>Enter your account email: we will send you a link to set a new password.</p>
          <EmailField autoComplete="email" value={email} onChange={setEmail} />
        </ActionForm>
      )}
      <p>
        <Link to="/sign-in">Back to sign in</Link>
      </p>
    </PublicPage>
  );
}
