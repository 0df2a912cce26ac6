import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import {
  type Webhook,
  type WebhookDelivery,
  webhookQuery,
  webhooks,
  webhooksQuery,
} from '../../api/sending.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { ConfirmActions, ConfirmButton, DialogButton } from '../../components/Dialog.tsx';
import { formatDateTime } from '../../components/format.ts';
import { useProject } from '../../project.tsx';
import { SigningSecret } from './SigningSecret.tsx';

/** What an Owner or Admin does to an endpoint: send a test, rotate the secret, pause, delete. */

/** Refreshes everything the page shows of this endpoint (its facts, its deliveries, the list). */
function useRefresh(webhookId: string) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: webhookQuery(project.id, webhookId).queryKey }),
      queryClient.invalidateQueries({ queryKey: webhooksQuery(project.id).queryKey }),
    ]);
}

function outcome(d: WebhookDelivery): string {
  const code = d.status_code === null ? '' : ` with ${d.status_code}`;
  const time = d.latency_ms === null ? '' : ` in ${d.latency_ms} ms`;
  if (d.status === 'succeeded') return `The test event was delivered: your endpoint answered${code}${time}.`;
  const again = d.next_retry_at ? ` It will be tried again at ${formatDateTime(d.next_retry_at)}.` : '';
  return `The test event was not delivered${code}${d.error ? `: ${d.error}` : ''}.${again}`;
}

/** POST /webhooks/{id}/test: a signed `webhook.test` event, sent now (retried when it fails); the attempt is the answer. */
function SendTest({ webhook }: { webhook: Webhook }) {
  const { project } = useProject();
  const refresh = useRefresh(webhook.id);
  const test = useMutation({
    mutationFn: () => webhooks.sendTest(project.id, webhook.id),
    onSettled: refresh,
  });
  return (
    <div>
      <button type="button" className="btn primary" onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? 'Sending…' : 'Send test event'}
      </button>
      {test.data && (
        <Notice tone={test.data.status === 'succeeded' ? 'success' : 'warning'}>{outcome(test.data)}</Notice>
      )}
      <ErrorMessage error={test.error} />
    </div>
  );
}

/** A new secret (the old one keeps signing beside it for 24 hours), shown once. */
function RotateSecret({ webhook }: { webhook: Webhook }) {
  const { project } = useProject();
  const refresh = useRefresh(webhook.id);
  const rotate = useMutation({
    mutationFn: () => webhooks.rotateSecret(project.id, webhook.id),
    onSuccess: refresh,
  });
  return (
    <DialogButton
      label="Rotate secret"
      className="btn"
      title={rotate.data ? 'Your new signing secret' : 'Rotate the signing secret?'}
      description={
        rotate.data
          ? undefined
          : 'Deliveries are signed with a new secret from now on, and also with the old one for 24 hours, so you can update your endpoint without losing any.'
      }
      onClose={() => rotate.reset()}
    >
      {() =>
        rotate.data?.secret ? (
          <SigningSecret what="this webhook" secret={rotate.data.secret} />
        ) : (
          <ConfirmActions
            confirm="Rotate secret"
            pendingLabel="Rotating…"
            tone="primary"
            action={rotate}
            onDone={() => undefined}
          />
        )
      }
    </DialogButton>
  );
}

/** Pauses deliveries, or resumes them (which clears the reason Posthorn disabled the endpoint for). */
function PauseResume({ webhook }: { webhook: Webhook }) {
  const { project } = useProject();
  const refresh = useRefresh(webhook.id);
  const toggle = useMutation({
    mutationFn: () => webhooks.update(project.id, webhook.id, { enabled: !webhook.enabled }),
    onSuccess: refresh,
  });
  return (
    <>
      <button type="button" className="btn" onClick={() => toggle.mutate()} disabled={toggle.isPending}>
        {webhook.enabled ? 'Pause deliveries' : 'Resume deliveries'}
      </button>
      <ErrorMessage error={toggle.error} />
    </>
  );
}

function DeleteWebhook({ webhook }: { webhook: Webhook }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation({
    mutationFn: () => webhooks.remove(project.id, webhook.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: webhooksQuery(project.id).queryKey });
      navigate({ to: '/webhooks' });
    },
  });
  return (
    <ConfirmButton
      label="Delete webhook"
      title="Delete this webhook?"
      description="No more events are delivered to it, and its delivery log goes with it."
      confirm="Delete webhook"
      pendingLabel="Deleting…"
      action={remove}
    />
  );
}

/** The endpoint's actions, in one row. */
export function WebhookActions({ webhook }: { webhook: Webhook }) {
  return (
    <div className="webhook-actions">
      <SendTest webhook={webhook} />
      <div className="actions">
        <RotateSecret webhook={webhook} />
        <PauseResume webhook={webhook} />
        <DeleteWebhook webhook={webhook} />
      </div>
    </div>
  );
}
