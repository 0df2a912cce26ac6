import { useQuery } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { type Webhook, webhookQuery } from '../../api/sending.ts';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';
import { WebhookActions } from './WebhookActions.tsx';
import { Deliveries } from './WebhookDeliveries.tsx';

const route = getRouteApi('/app/webhooks/$webhookId');

function Settings({ webhook }: { webhook: Webhook }) {
  return (
    <Facts
      className="facts break"
      rows={[
        ['URL', webhook.url],
        ['Events', webhook.events.join(', ')],
        ['Description', webhook.description ?? '—'],
        [
          'Deliveries',
          webhook.enabled
            ? 'enabled'
            : `paused${webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ''}`,
        ],
        ['Created', formatDateTime(webhook.created_at)],
        ['Changed', formatDateTime(webhook.updated_at)],
      ]}
    />
  );
}

/** One endpoint: its settings, a test event, secret rotation, and the log of deliveries with retry. */
export default function WebhookDetail() {
  const { webhookId } = route.useParams();
  const { project } = useProject();
  const manage = canManage(project);
  const webhook = useQuery(webhookQuery(project.id, webhookId));
  const w = webhook.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/webhooks">Back to webhooks</Link>
      </p>
      <PageHeader title="Webhook">
        {w && <StatusBadge status={w.enabled ? 'enabled' : 'disabled'} />}
      </PageHeader>
      <Loaded query={webhook}>
        {(w) => (
          <div className="detail">
            <Section title="Endpoint" wide>
              <Settings webhook={w} />
              {manage && <WebhookActions webhook={w} />}
            </Section>
            <Deliveries webhook={w} manage={manage} />
          </div>
        )}
      </Loaded>
    </>
  );
}
