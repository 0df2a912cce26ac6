import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import {
  WEBHOOK_EVENTS,
  type Webhook,
  type WebhookEvent,
  webhookQuery,
  webhooks,
  webhooksQuery,
} from '../../api/sending.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Dialog, DialogFormActions } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDate } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { SecretOnce } from '../../components/sending-parts.tsx';
import { canManage, useProject } from '../../project.tsx';

/** The event types as checkboxes, with a shortcut to tick them all. */
function EventChoice({ value, onChange }: { value: WebhookEvent[]; onChange(events: WebhookEvent[]): void }) {
  const toggle = (event: WebhookEvent, on: boolean) =>
    onChange(on ? [...value, event] : value.filter((e) => e !== event));
  return (
    <fieldset className="field events">
      <legend>Events</legend>
      <div className="events-all">
        <button type="button" className="btn link" onClick={() => onChange([...WEBHOOK_EVENTS])}>
          Select all
        </button>{' '}
        <button type="button" className="btn link" onClick={() => onChange([])}>
          Clear
        </button>
      </div>
      <div className="event-options">
        {WEBHOOK_EVENTS.map((event) => (
          <label key={event} className="radio">
            <input
              type="checkbox"
              name="events"
              value={event}
              checked={value.includes(event)}
              onChange={(e) => toggle(event, e.target.checked)}
            />{' '}
            <code>{event}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function CreateWebhookForm({ onCreated }: { onCreated(webhook: Webhook): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>([]);
  const create = useMutation({
    mutationFn: () =>
      webhooks.create(project.id, {
        url: url.trim(),
        events,
        description: description.trim() || null,
      }),
    onSuccess: (webhook) => {
      const { secret: _secret, ...stored } = webhook;
      queryClient.setQueryData(webhookQuery(project.id, webhook.id).queryKey, stored);
      queryClient.invalidateQueries({ queryKey: webhooksQuery(project.id).queryKey });
      onCreated(webhook);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="New webhook">
      <Field
        label="URL"
        name="url"
        type="url"
        required
        maxLength={2000}
        placeholder="https://example.com/hooks/posthorn"
        hint="Deliveries are POSTed here, signed (Standard Webhooks)."
        value={url}
        onChange={(e) => setUrl(e.target.value)}
      />
      <Field
        label="Description"
        name="description"
        maxLength={1000}
        hint="Optional: a note for people."
        value={description}
        onChange={(e) => setDescription(e.target.value)}
      />
      <EventChoice value={events} onChange={setEvents} />
      <ErrorMessage error={create.error} />
      <DialogFormActions label="Create webhook" pendingLabel="Creating…" pending={create.isPending} />
    </form>
  );
}

/** Create an endpoint; its secret lives only in this dialog's memory, never in a cache or the URL. */
function CreateWebhookDialog() {
  const [open, setOpen] = useState(false);
  const [created, setCreated] = useState<Webhook | null>(null);
  const change = (next: boolean) => {
    setOpen(next);
    if (!next) setCreated(null);
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => change(true)}>
        Create webhook
      </button>
      <Dialog open={open} onOpenChange={change} title={created ? 'Your new webhook' : 'Create a webhook'}>
        {created ? (
          <>
            <SecretOnce what={<span className="break">{created.url}</span>} secret={created.secret ?? ''} />
            <p>
              <Link to="/webhooks/$webhookId" params={{ webhookId: created.id }}>
                Open the webhook
              </Link>{' '}
              to send a test event.
            </p>
          </>
        ) : (
          <CreateWebhookForm onCreated={setCreated} />
        )}
      </Dialog>
    </>
  );
}

function WebhookTable({ list }: { list: Webhook[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Webhook endpoints of this project</caption>
      <thead>
        <tr>
          <th scope="col">URL</th>
          <th scope="col">Events</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {list.map((w) => (
          <tr key={w.id}>
            <th scope="row" data-label="URL" className="break">
              <Link to="/webhooks/$webhookId" params={{ webhookId: w.id }}>
                {w.url}
              </Link>
              {w.description && <span className="muted small block">{w.description}</span>}
            </th>
            <td data-label="Events" className="break">
              {w.events.length === WEBHOOK_EVENTS.length ? 'all events' : w.events.join(', ')}
            </td>
            <td data-label="Status">
              <StatusBadge status={w.enabled ? 'enabled' : 'disabled'} />
            </td>
            <td data-label="Created">{formatDate(w.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The project's webhook endpoints: list and create (the signing secret shown once). */
export default function Webhooks() {
  const { project } = useProject();
  const list = useQuery(webhooksQuery(project.id));
  return (
    <>
      <PageHeader title="Webhooks">{canManage(project) && <CreateWebhookDialog />}</PageHeader>
      <p className="muted">
        Posthorn POSTs each event to your endpoints as it happens, signed with the endpoint's secret, and
        tries a failed delivery again several times, for about a day.
      </p>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading webhooks…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <Notice>No webhooks yet.</Notice>
      ) : (
        list.data && <WebhookTable list={list.data.data} />
      )}
    </>
  );
}
