import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useProject } from '../project.tsx';
import { ErrorMessage, Notice } from './Alert.tsx';
import { Field } from './Field.tsx';

/**
 * "Send a test": to your own address (prefilled) or a project member's, the only addresses the API
 * takes for tests. `send` is the endpoint's call; what it sends is what is saved.
 */
export function TestSend({ hint, send }: { hint: string; send(to: string): Promise<unknown> }) {
  const { session } = useProject();
  const [to, setTo] = useState(session.account.email);
  const [sentTo, setSentTo] = useState<string | null>(null);
  const test = useMutation({
    mutationFn: () => send(to.trim()),
    onSuccess: () => setSentTo(to.trim()),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSentTo(null);
    test.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Send a test" className="test-send">
      <Field
        label="Send a test to"
        type="email"
        required
        hint={`Your address or a project member's. ${hint}`}
        value={to}
        onChange={(e) => setTo(e.target.value)}
      />
      <ErrorMessage error={test.error} />
      {sentTo && <Notice tone="success">Test sent to {sentTo}.</Notice>}
      <div className="actions">
        <button type="submit" className="btn" disabled={test.isPending}>
          {test.isPending ? 'Sending…' : 'Send test'}
        </button>
      </div>
    </form>
  );
}
