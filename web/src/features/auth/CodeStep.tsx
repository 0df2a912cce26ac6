import { useMutation } from '@tanstack/react-query';
import { useNavigate, useRouterState } from '@tanstack/react-router';
import { type ReactNode, useState } from 'react';
import { auth } from '../../api/endpoints.ts';
import { Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';

declare module '@tanstack/history' {
  interface HistoryState {
    /** On the sign-in and sign-up pages: the address a code was sent to (the code step is shown). */
    codeSentTo?: string;
  }
}

/**
 * The address the code was sent to, or null before one is: kept in the page's history entry, not
 * in the component, so a person who follows the dev mailbox link to read the code and comes back
 * (or reloads) finds the code step as it was, not an empty first step that would send a second email.
 */
export function useCodeSentTo(): [string | null, (email: string | null) => void] {
  const sentTo = useRouterState({ select: (s) => s.location.state.codeSentTo ?? null });
  const navigate = useNavigate();
  const set = (email: string | null) =>
    navigate({
      to: '.',
      search: (s) => s,
      state: (s) => ({ ...s, codeSentTo: email ?? undefined }),
      replace: true,
    });
  return [sentTo, set];
}

/**
 * The second step of signing in or up by email: the six-character code from the email, exchanged
 * for a session (which also confirms the address). `onBack` returns to the first step.
 */
export function CodeStep({
  email,
  notice,
  submit,
  onBack,
  onSignedIn,
}: {
  email: string;
  notice: ReactNode;
  submit: string;
  onBack(): void;
  onSignedIn(): Promise<void>;
}) {
  const [code, setCode] = useState('');
  const verify = useMutation({
    mutationFn: () => auth.verifyCode(email, code.trim()),
    onSuccess: onSignedIn,
  });
  return (
    <ActionForm
      label="Enter the emailed code"
      action={verify}
      submit={submit}
      pendingLabel="Signing in…"
      more={
        <button type="button" className="btn link" onClick={onBack}>
          Use another email
        </button>
      }
    >
      <Notice>{notice}</Notice>
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
