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
import { ErrorMessage } from '../../components/Alert.tsx';
import { Dialog, DialogClose } from '../../components/Dialog.tsx';
import { SelectField } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

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
    <section className="card" aria-labelledby="contact-details">
      <h2 id="contact-details">Details</h2>
      <dl className="facts">
        {facts.map(([k, v]) => (
          <div className="fact" key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <div className="actions">
        <Subscription contact={contact} />
      </div>
    </section>
  );
}

function Properties({ contact }: { contact: ContactWithConsent }) {
  const entries = Object.entries(contact.properties);
  return (
    <section className="card" aria-labelledby="contact-properties">
      <h2 id="contact-properties">Properties</h2>
      {entries.length === 0 ? (
        <p className="muted">No properties. Set them with the API, an import or a tracked event.</p>
      ) : (
        <dl className="facts">
          {entries.map(([k, v]) => (
            <div className="fact" key={k}>
              <dt>{k}</dt>
              <dd>
                <code>{JSON.stringify(v)}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
    </section>
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
    <section className="card" aria-labelledby="contact-lists">
      <h2 id="contact-lists">Lists</h2>
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
    </section>
  );
}

function ConsentHistory({ contact }: { contact: ContactWithConsent }) {
  return (
    <section className="card" aria-labelledby="contact-consent">
      <h2 id="contact-consent">Consent history</h2>
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
                {[c.source && `source: ${c.source}`, c.ip && `from ${c.ip}`].filter(Boolean).join(' · ') ||
                  'no source recorded'}
              </p>
              {c.text && <p className="break">“{c.text}”</p>}
            </li>
          ))}
        </ol>
      )}
    </section>
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
    <section className="card wide" aria-labelledby="contact-events">
      <h2 id="contact-events">Recent events</h2>
      <ErrorMessage error={events.error} />
      {events.data &&
        (events.data.data.length === 0 ? (
          <p className="muted">
            No events yet. Track them with <code>POST /v1/events</code>.
          </p>
        ) : (
          <ol className="timeline">
            {events.data.data.map((e) => (
              <EventItem key={e.id} event={e} />
            ))}
          </ol>
        ))}
    </section>
  );
}

function DeleteContact({ contact }: { contact: ContactWithConsent }) {
  const { project } = useProject();
  const navigate = useNavigate();
  const refresh = useRefresh();
  const [open, setOpen] = useState(false);
  const remove = useMutation({
    mutationFn: () => contacts.remove(project.id, contact.id),
    onSuccess: async () => {
      // leave the page first: its query must not ask again for the contact that is gone
      await navigate({ to: '/contacts' });
      await refresh();
    },
  });
  return (
    <>
      <button type="button" className="btn danger" onClick={() => setOpen(true)}>
        Delete contact
      </button>
      <Dialog
        open={open}
        onOpenChange={setOpen}
        title={`Delete ${contact.email}?`}
        description="The contact goes with its list memberships and events. This cannot be undone."
      >
        <ErrorMessage error={remove.error} />
        <div className="actions">
          <button
            type="button"
            className="btn danger"
            onClick={() => remove.mutate()}
            disabled={remove.isPending}
          >
            {remove.isPending ? 'Deleting…' : 'Delete'}
          </button>
          <DialogClose asChild>
            <button type="button" className="btn">
              Cancel
            </button>
          </DialogClose>
        </div>
      </Dialog>
    </>
  );
}

/** One contact: fields, properties, lists, consent history and recent events. */
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
      <ErrorMessage error={contact.error} />
      {contact.isPending && <p role="status">Loading contact…</p>}
      {c && (
        <div className="detail">
          <Details contact={c} />
          <ConsentHistory contact={c} />
          <Properties contact={c} />
          <Lists contact={c} />
          <RecentEvents contactId={c.id} />
        </div>
      )}
    </>
  );
}
