import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { type Domain, domainQuery, domains, domainsQuery, type SendingRate } from '../../api/sending.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { RateForm, rateLine } from '../../components/RateForm.tsx';
import { Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

/** The domain page's settings: inbound on or off, the sending rate, and removing the domain. */

function useUpdateDomain(domain: Domain) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: {
      inbound_enabled?: boolean;
      rate?: SendingRate;
      warmup?: { enabled?: boolean; schedule?: number[] | null };
    }) => domains.update(project.id, domain.id, body),
    onSuccess: (saved) => {
      queryClient.setQueryData(domainQuery(project.id, domain.id).queryKey, saved);
      queryClient.invalidateQueries({ queryKey: domainsQuery(project.id).queryKey });
    },
  });
}

/** Receiving mail at any address of the domain (a plan feature; the API says so when missing). */
export function InboundCard({ domain, manage }: { domain: Domain; manage: boolean }) {
  const update = useUpdateDomain(domain);
  const on = domain.inbound_enabled;
  return (
    <Section title="Inbound mail">
      <p>
        Receiving is <strong>{on ? 'on' : 'off'}</strong>.{' '}
        {on
          ? `Mail to any address at ${domain.name} is listed under Inbound once the domain is verified and its MX record (above) points to Posthorn.`
          : `Turn it on to receive mail sent to any address at ${domain.name}.`}
      </p>
      {manage && (
        <button
          type="button"
          className="btn"
          onClick={() => update.mutate({ inbound_enabled: !on })}
          disabled={update.isPending}
        >
          {on ? 'Turn inbound off' : 'Turn inbound on'}
        </button>
      )}
      <ErrorMessage error={update.error} />
    </Section>
  );
}

function DomainRateForm({ domain }: { domain: Domain }) {
  const update = useUpdateDomain(domain);
  return (
    <RateForm
      rate={domain.rate}
      label="Domain sending rate"
      saving={update}
      onSave={(rate) => update.mutate({ rate })}
    />
  );
}

/** The pace of marketing and automation mail from this domain (transactional mail is never slowed). */
export function RateCard({ domain, manage }: { domain: Domain; manage: boolean }) {
  return (
    <Section title="Sending rate">
      <p className="muted">
        The pace of marketing and automation mail from this domain, shared by every worker. Transactional mail
        is never slowed.
      </p>
      {manage ? <DomainRateForm domain={domain} /> : <p>{rateLine(domain.rate)}</p>}
    </Section>
  );
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The domain's warm-up plan: today's day, volume and use, the days ahead, and starting (the
 * default schedule) or ending it.
 */
export function WarmupCard({ domain, manage }: { domain: Domain; manage: boolean }) {
  const update = useUpdateDomain(domain);
  const plan = domain.warmup;
  return (
    <Section title="Warm-up">
      {plan ? (
        plan.finished ? (
          <p>
            The warm-up that began on {plan.started_on} is done ({plan.days} days): nothing is capped.
          </p>
        ) : (
          <>
            <p>
              Day <strong>{plan.day}</strong> of {plan.days} (
              {plan.default_schedule ? 'the default schedule' : 'its own schedule'}). Today:{' '}
              <strong>{count(plan.today.used)}</strong> of {count(plan.today.volume ?? 0)} messages.
            </p>
            <p className="muted small">
              Campaigns from {domain.name} send at most the day's volume, engaged contacts first; the rest
              waits for the next day. Transactional and flow mail is never held, but counts. Next days:{' '}
              {plan.schedule
                .slice(plan.day, plan.day + 5)
                .map(count)
                .join(', ') || 'none: the plan ends today'}
              .
            </p>
          </>
        )
      ) : (
        <p>
          No warm-up. A new domain earns mailbox providers' trust by volume that grows day by day: a warm-up
          holds campaigns from {domain.name} to a daily volume from 50 to 120,000 messages over 30 days.
        </p>
      )}
      {manage && (
        <button
          type="button"
          className="btn"
          onClick={() => update.mutate({ warmup: { enabled: !plan } })}
          disabled={update.isPending}
        >
          {plan ? 'End the warm-up' : 'Start a warm-up'}
        </button>
      )}
      <ErrorMessage error={update.error} />
    </Section>
  );
}

/** Removes the domain and its DKIM key, after a confirmation. */
export function RemoveDomain({ domain }: { domain: Domain }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation({
    mutationFn: () => domains.remove(project.id, domain.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: domainsQuery(project.id).queryKey });
      navigate({ to: '/domains' });
    },
  });
  return (
    <div className="danger-zone">
      <ConfirmButton
        label="Remove domain"
        title={`Remove ${domain.name}?`}
        description="Mail from this domain is refused from now on, and its DKIM key is deleted. Adding it again means publishing new records."
        confirm="Remove domain"
        pendingLabel="Removing…"
        action={remove}
      />
    </div>
  );
}
