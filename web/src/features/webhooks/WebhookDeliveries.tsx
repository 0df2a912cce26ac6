import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
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
import { Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

/**
 * An endpoint's recent deliveries: each attempt's request (the signed POST and its JSON body),
 * the answer (status, time, the start of its body or what went wrong) and the next try.
 */

const ANSWER_SHOWN = 200;

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

/** What the endpoint answered: its status and time, then the start of its body or the failure. */
function Answer({ delivery: d }: { delivery: WebhookDelivery }) {
  if (d.status === 'pending') return <span className="muted">not sent yet</span>;
  const body = d.response_excerpt ?? '';
  const head = [
    d.status_code === null ? 'no answer' : `HTTP ${d.status_code}`,
    d.latency_ms !== null && `${d.latency_ms} ms`,
  ];
  return (
    <>
      {head.filter(Boolean).join(' · ')}
      {d.error && <span className="block">{d.error}</span>}
      {body && (
        <span className="block muted small" title={body.length > ANSWER_SHOWN ? body : undefined}>
          “{body.length > ANSWER_SHOWN ? `${body.slice(0, ANSWER_SHOWN)}…` : body}”
        </span>
      )}
    </>
  );
}

function nextTry(d: WebhookDelivery): string {
  if (d.next_retry_at) return formatDateTime(d.next_retry_at);
  if (d.status === 'pending') return 'queued';
  return d.status === 'failed' ? 'none' : '—';
}

/** The request as it went: the POST line, the webhook-id header and the JSON body. */
function Request({ delivery: d, url }: { delivery: WebhookDelivery; url: string }) {
  return (
    <details>
      <summary>
        Request<span className="visually-hidden"> of this {d.event_type} delivery</span>
      </summary>
      <pre className="source">
        {`POST ${url}\nwebhook-id: ${d.message_id}\n\n${JSON.stringify(d.payload, null, 2)}`}
      </pre>
    </details>
  );
}

export function Deliveries({ webhook, manage }: { webhook: Webhook; manage: boolean }) {
  const { project } = useProject();
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...deliveriesQuery(project.id, webhook.id, page),
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
              // a queued attempt's row counts the attempts made so far: it shows the number it will be
              { label: 'Attempt', cell: (d) => (d.status === 'pending' ? d.attempt + 1 : d.attempt) },
              { label: 'Status', cell: (d) => <StatusBadge status={d.status} /> },
              { label: 'Answer', cell: (d) => <Answer delivery={d} />, className: 'break' },
              { label: 'Next try', cell: nextTry },
              {
                label: 'Request',
                cell: (d) => <Request delivery={d} url={webhook.url} />,
                className: 'break',
              },
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
