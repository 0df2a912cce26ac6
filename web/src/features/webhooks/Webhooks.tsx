import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import {
  DEFAULT_WEBHOOK_EVENTS,
  WEBHOOK_EVENTS,
  type Webhook,
  type WebhookEvent,
  webhookQuery,
  webhooks,
  webhooksQuery,
  webhookUrlRulesQuery,
} from '../../api/sending.ts';
import { Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';
import { SigningSecret } from './SigningSecret.tsx';

/** The event types as checkboxes (the delivery events ticked at first), with shortcuts. */
function EventChoice({ value, onChange }: { value: WebhookEvent[]; onChange(events: WebhookEvent[]): void }) {
  const toggle = (event: WebhookEvent, on: boolean) =>
    onChange(on ? [...value, event] : value.filter((e) => e !== event));
  return (
    <fieldset className="field events">
      <legend>Events</legend>
      <p className="muted small">
        The delivery events are ticked to start with: sent, delivered, bounced and complained.
      </p>
      <div className="events-all">
        <button type="button" className="btn link" onClick={() => onChange([...WEBHOOK_EVENTS])}>
          Select all
        </button>{' '}
        <button type="button" className="btn link" onClick={() => onChange([...DEFAULT_WEBHOOK_EVENTS])}>
          Delivery events only
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

type UrlRules = { local_server: boolean; loopback_allowed: boolean; private_allowed: boolean };

/** Where the URL may point on this server, in plain words. */
function urlHint(rules: UrlRules | undefined): string {
  const signed = 'Deliveries are POSTed here, signed (Standard Webhooks).';
  if (!rules) return signed;
  if (rules.private_allowed)
    return `${signed} This server is set up for development: plain http and private addresses are allowed too.`;
  if (rules.loopback_allowed)
    return `${signed} This server runs on your own computer, so you can try webhooks with a receiver on it, over plain http too, such as http://localhost:4000/hooks. A server with a public address delivers over https to public addresses only.`;
  return `${signed} Use an https address that can be reached from the internet.`;
}

function CreateWebhookForm({ onCreated }: { onCreated(webhook: Webhook): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const rules = useQuery(webhookUrlRulesQuery(project.id)).data;
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>(DEFAULT_WEBHOOK_EVENTS);
  const create = useMutation({
    mutationFn: async () => {
      // said in the form's words before the API would refuse an empty list in its own
      if (events.length === 0) throw new Error('Tick at least one event to deliver.');
      return webhooks.create(project.id, {
        url: url.trim(),
        events,
        description: description.trim() || null,
      });
    },
    onSuccess: (webhook) => {
      const { secret: _secret, ...stored } = webhook;
      queryClient.setQueryData(webhookQuery(project.id, webhook.id).queryKey, stored);
      queryClient.invalidateQueries({ queryKey: webhooksQuery(project.id).queryKey });
      onCreated(webhook);
    },
  });
  return (
    <ActionForm label="New webhook" action={create} submit="Create webhook" pendingLabel="Creating…" close>
      <Field
        label="URL"
        name="url"
        type="url"
        required
        maxLength={2000}
        placeholder={
          rules?.loopback_allowed ? 'http://localhost:4000/hooks' : 'https://example.com/hooks/posthorn'
        }
        hint={urlHint(rules)}
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
    </ActionForm>
  );
}

/** Create an endpoint; its secret lives only in this dialog's memory, never in a cache or the URL. */
function CreateWebhookDialog() {
  const [created, setCreated] = useState<Webhook | null>(null);
  return (
    <DialogButton
      label="Create webhook"
      title={created ? 'Your new webhook' : 'Create a webhook'}
      onClose={() => setCreated(null)}
    >
      {() =>
        created ? (
          <>
            <SigningSecret
              what={<span className="break">{created.url}</span>}
              secret={created.secret ?? ''}
            />
            <p>
              <Link to="/webhooks/$webhookId" params={{ webhookId: created.id }}>
                Open the webhook
              </Link>{' '}
              to send a test event.
            </p>
          </>
        ) : (
          <CreateWebhookForm onCreated={setCreated} />
        )
      }
    </DialogButton>
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
      <Loaded
        query={list}
        loading="Loading webhooks…"
        isEmpty={(data) => data.data.length === 0}
        empty={<Notice>No webhooks yet.</Notice>}
      >
        {(data) => (
          <DataTable
            caption="Webhook endpoints of this project"
            rows={data.data}
            columns={[
              {
                label: 'URL',
                className: 'break',
                cell: (w) => (
                  <>
                    <Link to="/webhooks/$webhookId" params={{ webhookId: w.id }}>
                      {w.url}
                    </Link>
                    {w.description && <span className="muted small block">{w.description}</span>}
                  </>
                ),
              },
              {
                label: 'Events',
                className: 'break',
                cell: (w) => (w.events.length === WEBHOOK_EVENTS.length ? 'all events' : w.events.join(', ')),
              },
              { label: 'Status', cell: (w) => <StatusBadge status={w.enabled ? 'enabled' : 'disabled'} /> },
              { label: 'Created', cell: (w) => formatDate(w.created_at) },
            ]}
          />
        )}
      </Loaded>
    </>
  );
}
