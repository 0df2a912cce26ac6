import * as Tabs from '@radix-ui/react-tabs';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { auth, sessionQuery } from '../../api/endpoints.ts';
import { Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { EmailField } from './EmailField.tsx';
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
    return (
      <ActionForm
        label="Sign in with an emailed code"
        action={send}
        onSubmit={() => send.mutate(email.trim())}
        submit="Email me a code"
        pendingLabel="Sending…"
      >
        <EmailField autoComplete="email" value={email} onChange={setEmail} />
      </ActionForm>
    );
  }
  return (
    <ActionForm
      label="Enter the emailed code"
      action={verify}
      submit="Sign in"
      pendingLabel="Signing in…"
      more={
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
      }
    >
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
    </ActionForm>
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
  return (
    <ActionForm
      label="Sign in with a password"
      action={signIn}
      submit="Sign in"
      pendingLabel="Signing in…"
      more={
        <Link to="/forgot" className="btn link">
          Forgot your password?
        </Link>
      }
    >
      <EmailField autoComplete="username" value={email} onChange={setEmail} />
      <Field
        label="Password"
        type="password"
        name="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
    </ActionForm>
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
