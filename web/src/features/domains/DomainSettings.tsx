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
    mutationFn: (body: { inbound_enabled?: boolean; rate?: SendingRate }) =>
      domains.update(project.id, domain.id, body),
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
