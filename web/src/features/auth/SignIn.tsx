import * as Tabs from '@radix-ui/react-tabs';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { auth, sessionQuery } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { PublicPage } from './PublicPage.tsx';

const route = getRouteApi('/sign-in');

/** After signing in: load the session, then go where the person was headed. */
function useSignedIn() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { next } = route.useSearch();
  return async () => {
    await queryClient.fetchQuery({ ...sessionQuery, staleTime: 0 });
    await navigate({ href: next ?? '/' });
  };
}

function EmailCodeForm() {
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const signedIn = useSignedIn();
  const send = useMutation({
    mutationFn: (address: string) => auth.requestCode(address),
    onSuccess: (_, address) => setSentTo(address),
  });
  const verify = useMutation({
    mutationFn: () => auth.verifyCode(sentTo ?? email, code.trim()),
    onSuccess: signedIn,
  });

  if (!sentTo) {
    const submit = (e: FormEvent) => {
      e.preventDefault();
      send.mutate(email.trim());
    };
    return (
      <form onSubmit={submit} aria-label="Sign in with an emailed code">
        <Field
          label="Email"
          type="email"
          name="email"
          autoComplete="email"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <ErrorMessage error={send.error} />
        <button type="submit" className="btn primary" disabled={send.isPending}>
          {send.isPending ? 'Sending…' : 'Email me a code'}
        </button>
      </form>
    );
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    verify.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Enter the emailed code">
      <Notice>
        If <strong>{sentTo}</strong> has an account, a six-character code is on its way. It is valid for a few
        minutes.
      </Notice>
      <Field
        label="Code"
        name="code"
        autoComplete="one-time-code"
        autoCapitalize="characters"
        spellCheck={false}
        required
        maxLength={12}
        value={code}
        onChange={(e) => setCode(e.target.value)}
      />
      <ErrorMessage error={verify.error} />
      <div className="actions">
        <button type="submit" className="btn primary" disabled={verify.isPending}>
          {verify.isPending ? 'Signing in…' : 'Sign in'}
        </button>
        <button
          type="button"
          className="btn link"
          onClick={() => {
            setSentTo(null);
            setCode('');
            verify.reset();
          }}
        >
          Use another email
        </button>
      </div>
    </form>
  );
}

function PasswordForm() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signedIn = useSignedIn();
  const signIn = useMutation({
    mutationFn: () => auth.signInWithPassword(email.trim(), password),
    onSuccess: signedIn,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    signIn.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Sign in with a password">
      <Field
        label="Email"
        type="email"
        name="email"
        autoComplete="username"
        required
        value={email}
        onChange={(e) => setEmail(e.target.value)}
      />
      <Field
        label="Password"
        type="password"
        name="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <ErrorMessage error={signIn.error} />
      <div className="actions">
        <button type="submit" className="btn primary" disabled={signIn.isPending}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </button>
        <Link to="/forgot" className="btn link">
          Forgot your password?
        </Link>
      </div>
    </form>
  );
}

/** Sign in with a code sent by email, or with a password once one is set. */
export default function SignIn() {
  return (
    <PublicPage title="Sign in to Posthorn">
      <Tabs.Root defaultValue="code" className="tabs">
        <Tabs.List className="tab-list" aria-label="How to sign in">
          <Tabs.Trigger value="code" className="tab">
            Email code
          </Tabs.Trigger>
          <Tabs.Trigger value="password" className="tab">
            Password
          </Tabs.Trigger>
        </Tabs.List>
        <Tabs.Content value="code" className="tab-panel">
          <EmailCodeForm />
        </Tabs.Content>
        <Tabs.Content value="password" className="tab-panel">
          <PasswordForm />
        </Tabs.Content>
      </Tabs.Root>
      <p className="muted small">
        No account yet? Create one with <code>npx posthorn login</code> or <code>POST /v1/signup</code>.
      </p>
    </PublicPage>
  );
}
