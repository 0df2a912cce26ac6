import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { type ContactTopic, contactTopicsQuery, topics } from '../../api/topics.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Loaded } from '../../components/Loaded.tsx';
import { Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

/** One topic's switch: the contact gets it or not; a change is recorded as the dashboard's. */
function TopicSwitch({
  contactId,
  topic,
  marketing,
}: {
  contactId: string;
  topic: ContactTopic;
  marketing: boolean;
}) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const given = topic.subscription === 'opt_in';
  // the switch shows the choice at once; the contact's topics as read again confirm it
  const [on, setOn] = useState(given);
  useEffect(() => setOn(given), [given]);
  const choose = useMutation({
    mutationFn: (to: boolean) => topics.choose(project.id, contactId, topic.id, to ? 'opt_in' : 'opt_out'),
    onMutate: (to) => setOn(to),
    onError: () => setOn(given),
    onSuccess: () =>
      Promise.all(
        ['contact', 'topics'].map((k) =>
          queryClient.invalidateQueries({ queryKey: ['project', project.id, k] }),
        ),
      ),
  });
  return (
    <li>
      <label className="radio">
        <input
          type="checkbox"
          checked={on}
          disabled={choose.isPending}
          onChange={(e) => choose.mutate(e.target.checked)}
        />{' '}
        {topic.name}
        {!topic.chosen && <span className="muted small"> (the topic's default)</span>}
        {on && !marketing && (
          <span className="muted small"> (not sent: unsubscribed from all marketing)</span>
        )}
      </label>
      <ErrorMessage error={choose.error} />
    </li>
  );
}

/** The contact's topics, each with a switch; a link to the Topics screen when there are none. */
export function ContactTopics({ contactId, marketing }: { contactId: string; marketing: boolean }) {
  const { project } = useProject();
  const mine = useQuery(contactTopicsQuery(project.id, contactId));
  return (
    <Section title="Topics">
      <Loaded
        query={mine}
        loading="Loading topics…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p className="muted">
            This project has no topics yet. <Link to="/topics">Make one</Link> so readers can leave one kind
            of mail and keep the others.
          </p>
        }
      >
        {(data) => (
          <ul className="plain-list">
            {data.data.map((t) => (
              <TopicSwitch key={t.id} contactId={contactId} topic={t} marketing={marketing} />
            ))}
          </ul>
        )}
      </Loaded>
    </Section>
  );
}
