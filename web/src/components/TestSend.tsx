import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { useProject } from '../project.tsx';
import { Notice } from './Alert.tsx';
import { Field } from './Field.tsx';
import { ActionForm } from './Form.tsx';

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
  return (
    <ActionForm
      label="Send a test"
      className="test-send"
      action={test}
      onSubmit={() => {
        setSentTo(null);
        test.mutate();
      }}
      submit="Send test"
      pendingLabel="Sending…"
      submitClassName="btn"
      note={sentTo && <Notice tone="success">Test sent to {sentTo}.</Notice>}
      row
    >
      <Field
        label="Send a test to"
        type="email"
        required
        hint={`Your address or a project member's. ${hint}`}
        value={to}
        onChange={(e) => setTo(e.target.value)}
      />
    </ActionForm>
  );
}
