import { useMutation } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { auth } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { PublicPage } from './PublicPage.tsx';

/** Asks for a password-reset link (single use, valid for one hour); the answer never says whether the account exists. */
export default function Forgot() {
  const [email, setEmail] = useState('');
  const forgot = useMutation({ mutationFn: (address: string) => auth.forgotPassword(address) });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    forgot.mutate(email.trim());
  };
  return (
    <PublicPage title="Reset your password">
      {forgot.isSuccess ? (
        <Notice tone="success">
          If <strong>{forgot.variables}</strong> has an account, we emailed a link to set a new password. It
          works once, within one hour.
        </Notice>
      ) : (
        <form onSubmit={submit} aria-label="Request a password reset link">
          <p>Enter your account email: we will send you a link to set a new password.</p>
          <Field
            label="Email"
            type="email"
            name="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <ErrorMessage error={forgot.error} />
          <button type="submit" className="btn primary" disabled={forgot.isPending}>
            {forgot.isPending ? 'Sending…' : 'Email me a link'}
          </button>
        </form>
      )}
      <p>
        <Link to="/sign-in">Back to sign in</Link>
      </p>
    </PublicPage>
  );
}
