import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useState } from 'react';
import {
  DELIVERIES_PER_PAGE,
  deliveriesQuery,
  type Webhook,
  type WebhookDelivery,
  webhookQuery,
  webhooks,
} from '../../api/sending.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { PagedTable, paging } from '../../components/DataTable.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';
import { WebhookActions } from './WebhookActions.tsx';

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

/** POST …/deliveries/{id}/retry: a new attempt now, with the same webhook-id. */
function RetryButton({ delivery }: { delivery: WebhookDelivery }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const retry = useMutation({
    mutationFn: () => webhooks.retry(project.id, delivery.webhook_id, delivery.id),
    onSettled: () =>
      queryClient.invalidateQueries({ queryKey: webhookQuery(project.id, delivery.webhook_id).queryKey }),
  });
  return (
    <>
      <button type="button" className="btn" onClick={() => retry.mutate()} disabled={retry.isPending}>
        {retry.isPending ? 'Retrying…' : 'Retry'}
        <span className="visually-hidden">
          {' '}
          {delivery.event_type} of {formatDateTime(delivery.created_at)}
        </span>
      </button>
      <ErrorMessage error={retry.error} />
    </>
  );
}

function response(d: WebhookDelivery): string {
  const parts = [
    d.status_code === null ? null : `HTTP ${d.status_code}`,
    d.latency_ms === null ? null : `${d.latency_ms} ms`,
    d.error,
    d.response_excerpt ? `“${d.response_excerpt}”` : null,
    d.next_retry_at ? `next try ${formatDateTime(d.next_retry_at)}` : null,
  ];
  return parts.filter(Boolean).join(' · ') || '—';
}

function Deliveries({ webhookId, manage }: { webhookId: string; manage: boolean }) {
  const { project } = useProject();
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...deliveriesQuery(project.id, webhookId, page),
    placeholderData: keepPreviousData,
    // an attempt still pending is retried by the worker: look again every few seconds
    refetchInterval: (query) => (query.state.data?.data.some((d) => d.status === 'pending') ? 3000 : false),
  });
  return (
    <Section title="Deliveries" wide>
      <Loaded
        query={list}
        loading="Loading deliveries…"
        isEmpty={(data) => data.total === 0}
        empty={<p>No deliveries yet. Send a test event to see one.</p>}
      >
        {(data) => (
          <PagedTable
            caption="Delivery attempts, newest first"
            rows={data.data}
            columns={[
              { label: 'Time', cell: (d) => formatDateTime(d.created_at) },
              { label: 'Event', cell: (d) => <code>{d.event_type}</code> },
              { label: 'Attempt', cell: (d) => d.attempt },
              { label: 'Status', cell: (d) => <StatusBadge status={d.status} /> },
              { label: 'Response', cell: response, className: 'break' },
              manage && {
                label: 'Actions',
                cell: (d) => d.status !== 'pending' && <RetryButton delivery={d} />,
              },
            ]}
            pager={paging(page, data.total, DELIVERIES_PER_PAGE, ['delivery', 'deliveries'], {
              onPage: setPage,
            })}
          />
        )}
      </Loaded>
    </Section>
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
            <Deliveries webhookId={w.id} manage={manage} />
          </div>
        )}
      </Loaded>
    </>
  );
}
