import { useMutation } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { auth } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { PublicPage } from './PublicPage.tsx';

const route = getRouteApi('/reset');
// the server has the last word (its 400 names the rule); this only saves a round trip
const MIN_LENGTH = 10;

/** The page of the emailed reset link: a new password, once; a used or expired link says so. */
export default function Reset() {
  const { token } = route.useSearch();
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const reset = useMutation({ mutationFn: () => auth.resetPassword(token ?? '', password) });

  if (!token) {
    return (
      <PublicPage title="Set a new password">
        <Notice tone="warning">
          This link is incomplete. Open the link from the email again, or ask for a new one.
        </Notice>
        <p>
          <Link to="/forgot">Ask for a new link</Link>
        </p>
      </PublicPage>
    );
  }
  if (reset.isSuccess) {
    return (
      <PublicPage title="Password changed">
        <Notice tone="success">
          Your new password is set. Other sessions of your account were signed out.
        </Notice>
        <p>
          <Link to="/sign-in" className="btn primary">
            Sign in
          </Link>
        </p>
      </PublicPage>
    );
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setMismatch(password !== confirm);
    if (password === confirm) reset.mutate();
  };
  return (
    <PublicPage title="Set a new password">
      <form onSubmit={submit} aria-label="Set a new password">
        <Field
          label="New password"
          type="password"
          name="password"
          autoComplete="new-password"
          minLength={MIN_LENGTH}
          required
          hint={`At least ${MIN_LENGTH} characters.`}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <Field
          label="Repeat the new password"
          type="password"
          name="confirm"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
        />
        {mismatch && (
          <p className="alert alert-error" role="alert">
            The two passwords differ.
          </p>
        )}
        <ErrorMessage error={reset.error} />
        {reset.isError && (
          <p>
            <Link to="/forgot">Ask for a new link</Link>
          </p>
        )}
        <button type="submit" className="btn primary" disabled={reset.isPending}>
          {reset.isPending ? 'Saving…' : 'Set password'}
        </button>
      </form>
    </PublicPage>
  );
}
