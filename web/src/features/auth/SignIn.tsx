import * as Tabs from '@radix-ui/react-tabs';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { auth, sessionQuery } from '../../api/endpoints.ts';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { CodeStep, useCodeSentTo } from './CodeStep.tsx';
import { EmailField } from './EmailField.tsx';
import { MailboxHint } from './MailboxHint.tsx';
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
  const [sentTo, setSentTo] = useCodeSentTo();
  const signedIn = useSignedIn();
  const send = useMutation({
    mutationFn: (address: string) => auth.requestCode(address),
    onSuccess: (_, address) => setSentTo(address),
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
    <CodeStep
      email={sentTo}
      submit="Sign in"
      onBack={() => setSentTo(null)}
      onSignedIn={signedIn}
      notice={
        <>
          If <strong>{sentTo}</strong> has an account, a six-character code is on its way. It is valid for a
          few minutes.
        </>
      }
    />
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
      <MailboxHint />
      <p>
        No account yet? <Link to="/sign-up">Create an account</Link>
      </p>
    </PublicPage>
  );
}
