import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import {
  type ContactWithConsent,
  contactEventsQuery,
  contactQuery,
  contacts,
  lists as listsApi,
  listsQuery,
  type TrackedEvent,
} from '../../api/audience.ts';
import { topicsQuery } from '../../api/topics.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { SelectField } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';
import { ContactMessages } from './contact-messages.tsx';
import { ContactTopics } from './contact-topics.tsx';

const route = getRouteApi('/app/contacts/$contactId');

/** Invalidates what shows this contact (its page, the contacts list, list member counts). */
function useRefresh() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return () =>
    Promise.all(
      ['contact', 'contacts', 'lists'].map((k) =>
        queryClient.invalidateQueries({ queryKey: ['project', project.id, k] }),
      ),
    );
}

function Subscription({ contact }: { contact: ContactWithConsent }) {
  const { project } = useProject();
  const refresh = useRefresh();
  const change = useMutation({
    mutationFn: () =>
      contacts.update(project.id, contact.id, {
        consent: { status: contact.subscribed ? 'withdrawn' : 'granted', source: 'dashboard' },
      }),
    onSuccess: refresh,
  });
  return (
    <>
      <ErrorMessage error={change.error} />
      <button type="button" className="btn" onClick={() => change.mutate()} disabled={change.isPending}>
        {contact.subscribed ? 'Unsubscribe from marketing' : 'Record consent to marketing'}
      </button>
    </>
  );
}

function Details({ contact }: { contact: ContactWithConsent }) {
  const facts: [string, string][] = [
    ['Email', contact.email],
    ['First name', contact.first_name ?? '—'],
    ['Last name', contact.last_name ?? '—'],
    ['Marketing', contact.subscribed ? 'subscribed' : 'unsubscribed'],
    ['Created', formatDateTime(contact.created_at)],
    ['Updated', formatDateTime(contact.updated_at)],
    ['Id', contact.id],
  ];
  return (
    <Section title="Details">
      <Facts rows={facts} />
      <div className="actions">
        <Subscription contact={contact} />
      </div>
    </Section>
  );
}

function Properties({ contact }: { contact: ContactWithConsent }) {
  const entries = Object.entries(contact.properties);
  return (
    <Section title="Properties">
      {entries.length === 0 ? (
        <p className="muted">No properties. Set them with the API, an import or a tracked event.</p>
      ) : (
        <Facts rows={entries.map(([k, v]) => [k, <code key={k}>{JSON.stringify(v)}</code>])} />
      )}
    </Section>
  );
}

function Lists({ contact }: { contact: ContactWithConsent }) {
  const { project } = useProject();
  const all = useQuery(listsQuery(project.id));
  const refresh = useRefresh();
  const others = (all.data?.data ?? []).filter((l) => !contact.lists.includes(l.id));
  const [chosen, setChosen] = useState('');
  const add = useMutation({
    mutationFn: (listId: string) => listsApi.addEmails(project.id, listId, [contact.email]),
    onSuccess: async () => {
      setChosen('');
      await refresh();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const target = chosen || others[0]?.id;
    if (target) add.mutate(target);
  };
  const nameOf = (id: string) => all.data?.data.find((l) => l.id === id)?.name ?? id;
  return (
    <Section title="Lists">
      {contact.lists.length === 0 ? (
        <p className="muted">On no list.</p>
      ) : (
        <ul>
          {contact.lists.map((id) => (
            <li key={id}>
              <Link to="/contacts" search={{ list: id }}>
                {nameOf(id)}
              </Link>
            </li>
          ))}
        </ul>
      )}
      {others.length > 0 && (
        <form onSubmit={submit} aria-label="Add to a list" className="inline-form">
          <SelectField
            label="Add to list"
            value={chosen || others[0].id}
            onChange={setChosen}
            options={others.map((l) => ({ value: l.id, label: l.name }))}
          />
          <button type="submit" className="btn" disabled={add.isPending}>
            Add
          </button>
        </form>
      )}
      <ErrorMessage error={add.error ?? all.error} />
    </Section>
  );
}

function ConsentHistory({ contact }: { contact: ContactWithConsent }) {
  const { project } = useProject();
  const topicList = useQuery(topicsQuery(project.id));
  const topicNames = new Map((topicList.data?.data ?? []).map((t) => [t.id, t.name]));
  return (
    <Section title="Consent history">
      {contact.consent_history.length === 0 ? (
        <p className="muted">No consent recorded.</p>
      ) : (
        <ol className="timeline">
          {contact.consent_history.map((c) => (
            <li key={`${c.created_at}-${c.status}`}>
              <div className="timeline-head">
                <span className={`badge ${c.status === 'granted' ? 'badge-good' : 'badge-muted'}`}>
                  {c.status}
                </span>
                <time dateTime={c.created_at}>{formatDateTime(c.created_at)}</time>
              </div>
              <p className="muted small">
                {[
                  c.topic_id && `topic: ${topicNames.get(c.topic_id) ?? 'deleted'}`,
                  c.source && `source: ${c.source}`,
                  c.ip && `from ${c.ip}`,
                ]
                  .filter(Boolean)
                  .join(' · ') || 'no source recorded'}
              </p>
              {c.text && <p className="break">“{c.text}”</p>}
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}

function EventItem({ event }: { event: TrackedEvent }) {
  const props = Object.keys(event.properties).length ? JSON.stringify(event.properties) : null;
  return (
    <li>
      <div className="timeline-head">
        <strong>{event.event}</strong>
        <time dateTime={event.created_at}>{formatDateTime(event.created_at)}</time>
      </div>
      {event.value !== null && (
        <p>
          {event.value} {event.currency}
          {event.quantity !== null && ` × ${event.quantity}`}
        </p>
      )}
      {props && (
        <p className="break small">
          <code>{props}</code>
        </p>
      )}
    </li>
  );
}

function RecentEvents({ contactId }: { contactId: string }) {
  const { project } = useProject();
  const events = useQuery(contactEventsQuery(project.id, contactId));
  return (
    <Section title="Recent events" wide>
      <ErrorMessage error={events.error} />
      {events.data &&
        (events.data.data.length === 0 ? (
          <p className="muted">
            No events tracked yet. Your app records what a contact does, such as a purchase, through the
            events API; they show here.
          </p>
        ) : (
          <ol className="timeline">
            {events.data.data.map((e) => (
              <EventItem key={e.id} event={e} />
            ))}
          </ol>
        ))}
    </Section>
  );
}

function DeleteContact({ contact }: { contact: ContactWithConsent }) {
  const { project } = useProject();
  const navigate = useNavigate();
  const refresh = useRefresh();
  const remove = useMutation({
    mutationFn: () => contacts.remove(project.id, contact.id),
    onSuccess: async () => {
      // leave the page first: its query must not ask again for the contact that is gone
      await navigate({ to: '/contacts' });
      await refresh();
    },
  });
  return (
    <ConfirmButton
      label="Delete contact"
      title={`Delete ${contact.email}?`}
      description="The contact goes with its list memberships and events. This cannot be undone."
      confirm="Delete"
      pendingLabel="Deleting…"
      action={remove}
    />
  );
}

/** One contact: fields, properties, lists, consent history, the messages they were sent and recent events. */
export default function ContactDetail() {
  const { project } = useProject();
  const { contactId } = route.useParams();
  const contact = useQuery(contactQuery(project.id, contactId));
  const c = contact.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/contacts">Contacts</Link>
      </p>
      <PageHeader title={c?.email ?? 'Contact'}>{c && <DeleteContact contact={c} />}</PageHeader>
      <Loaded query={contact} loading="Loading contact…">
        {(c) => (
          <div className="detail">
            <Details contact={c} />
            <ConsentHistory contact={c} />
            <ContactTopics contactId={c.id} marketing={c.subscribed} />
            <Properties contact={c} />
            <Lists contact={c} />
            <ContactMessages contactId={c.id} />
            <RecentEvents contactId={c.id} />
          </div>
        )}
      </Loaded>
    </>
  );
}
