import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { auth, sessionQuery } from '../../api/endpoints.ts';
import { ActionForm } from '../../components/Form.tsx';
import { NameField, TermsField } from './AccountFields.tsx';
import { CodeStep, useCodeSentTo } from './CodeStep.tsx';
import { EmailField } from './EmailField.tsx';
import { MailboxHint } from './MailboxHint.tsx';
import { PublicPage } from './PublicPage.tsx';

/**
 * Creating an account: a name, an address and the terms, ticked by the person (never for them).
 * One email brings one code; entering it confirms the address and signs in, on the Overview.
 */
export default function SignUp() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [terms, setTerms] = useState(false);
  const [sentTo, setSentTo] = useCodeSentTo();
  const signUp = useMutation({
    mutationFn: () => auth.signUp({ name: name.trim(), email: email.trim(), accept_terms: terms }),
    onSuccess: (sent) => setSentTo(sent.email),
  });

  return (
    <PublicPage title="Create your Posthorn account">
      {sentTo ? (
        <CodeStep
          email={sentTo}
          submit="Confirm and sign in"
          onBack={() => {
            setSentTo(null);
            signUp.reset();
          }}
          onSignedIn={async () => {
            await queryClient.fetchQuery({ ...sessionQuery, staleTime: 0 });
            await navigate({ to: '/' });
          }}
          notice={
            <>
              A six-character code is on its way to <strong>{sentTo}</strong>. Enter it to confirm the address
              and sign in.
            </>
          }
        />
      ) : (
        <ActionForm label="Create an account" action={signUp} submit="Create account" pendingLabel="Sending…">
          <NameField value={name} onChange={setName} />
          <EmailField autoComplete="email" value={email} onChange={setEmail} />
          <TermsField checked={terms} onChange={setTerms} />
        </ActionForm>
      )}
      <MailboxHint />
      <p>
        Already have an account? <Link to="/sign-in">Sign in</Link>
      </p>
    </PublicPage>
  );
}
