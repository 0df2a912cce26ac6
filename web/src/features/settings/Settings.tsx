import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import {
  projectsQuery,
  sendingRateQuery,
  settings,
  type Workspace,
  workspacesQuery,
} from '../../api/audience.ts';
import { accountStatusQuery, type Limits, limitsQuery, sessionQuery } from '../../api/endpoints.ts';
import type { SendingRate } from '../../api/sending.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field, SelectField, TextAreaField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { PlanFeatures } from '../../components/PlanFeatures.tsx';
import { RateForm, rateLine } from '../../components/RateForm.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { canManage, useProject } from '../../project.tsx';
import { LocalTimeCard } from './local-time.tsx';

const ofLimit = (used: number, limit: number | null) =>
  limit ? `${formatNumber(used)} of ${formatNumber(limit)}` : `${formatNumber(used)} (unmetered)`;

function PlanFacts({ limits }: { limits: Limits }) {
  const facts: [string, string][] = [
    ['Plan', limits.plan_name],
    ['Sent this month', ofLimit(limits.sending.this_month, limits.sending.included_per_month)],
    ['Remaining', limits.sending.remaining === null ? 'unmetered' : formatNumber(limits.sending.remaining)],
    ['Contacts', ofLimit(limits.contacts.count, limits.contacts.limit || null)],
  ];
  return (
    <>
      <Facts rows={facts} />
      {limits.sending.over_limit && (
        <p className="alert alert-warning">
          The monthly allowance is used up: sending is refused until next month.
        </p>
      )}
      <PlanFeatures features={limits.features} />
    </>
  );
}

function PlanCard() {
  const { project } = useProject();
  const limits = useQuery(limitsQuery(project.id));
  return (
    <Section title="Plan and usage">
      <ErrorMessage error={limits.error} />
      {limits.data && <PlanFacts limits={limits.data} />}
    </Section>
  );
}

function FooterForm({ current }: { current: string }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [address, setAddress] = useState(current);
  const save = useMutation({
    mutationFn: () => settings.setFooter(project.id, address),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: accountStatusQuery(project.id).queryKey }),
  });
  return (
    <ActionForm label="Footer postal address" action={save} submit="Save address" pendingLabel="Saving…">
      <TextAreaField
        label="Postal address"
        rows={3}
        required
        minLength={10}
        maxLength={500}
        hint="Printed in the footer of marketing and automation mail, as anti-spam laws require. 10 to 500 characters."
        value={address}
        onChange={(e) => setAddress(e.target.value)}
      />
      {save.isSuccess && <Notice tone="success">Footer address saved.</Notice>}
    </ActionForm>
  );
}

function FooterCard() {
  const { project } = useProject();
  const me = useQuery(accountStatusQuery(project.id));
  const footer = me.data?.footer;
  return (
    <Section title="Footer address">
      <ErrorMessage error={me.error} />
      {footer && !footer.is_your_own_address && (
        <Notice tone="warning">The footer shows a placeholder address: set your own postal address.</Notice>
      )}
      {footer &&
        (canManage(project) ? (
          <FooterForm current={footer.is_your_own_address ? footer.address : ''} />
        ) : (
          <p className="break">{footer.address}</p>
        ))}
    </Section>
  );
}

function ProjectRateForm({ rate }: { rate: SendingRate }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (next: SendingRate) => settings.setSendingRate(project.id, next),
    onSuccess: (saved) => queryClient.setQueryData(sendingRateQuery(project.id).queryKey, saved),
  });
  return <RateForm rate={rate} label="Sending rate" saving={save} onSave={(next) => save.mutate(next)} />;
}

function RateCard() {
  const { project } = useProject();
  const rate = useQuery(sendingRateQuery(project.id));
  const r = rate.data;
  return (
    <Section title="Sending rate">
      <p className="muted">
        The pace of marketing and automation mail (a campaign may set its own). Transactional mail is never
        slowed.
      </p>
      <ErrorMessage error={rate.error} />
      {r && (canManage(project) ? <ProjectRateForm rate={r} /> : <p>{rateLine(r)}</p>)}
    </Section>
  );
}

function NewProjectForm({ workspaces }: { workspaces: Workspace[] }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [workspace, setWorkspace] = useState(workspaces[0].id);
  const create = useMutation({
    mutationFn: () => settings.createProject({ name: name.trim(), workspace_id: workspace }),
    onSuccess: async () => {
      setName('');
      await queryClient.invalidateQueries({ queryKey: ['account'] });
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="New project" className="inline-form">
      <Field
        label="New project name"
        required
        maxLength={100}
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      {workspaces.length > 1 && (
        <SelectField
          label="In workspace"
          value={workspace}
          onChange={setWorkspace}
          options={workspaces.map((w) => ({ value: w.id, label: w.name }))}
        />
      )}
      <button type="submit" className="btn" disabled={create.isPending}>
        Create project
      </button>
      <ErrorMessage error={create.error} />
    </form>
  );
}

function WorkspacesCard() {
  const workspaces = useQuery(workspacesQuery);
  const projects = useQuery(projectsQuery);
  const ws = workspaces.data?.data ?? [];
  const administered = ws.filter((w) => w.role === 'owner' || w.role === 'admin');
  return (
    <Section title="Workspaces and projects">
      <ErrorMessage error={workspaces.error ?? projects.error} />
      {workspaces.data && projects.data && (
        <ul className="workspaces">
          {ws.map((w) => (
            <li key={w.id}>
              <strong>{w.name}</strong>{' '}
              <span className="muted">
                ({w.plan} plan, {w.role ?? 'member'})
              </span>
              <ul>
                {projects.data.data
                  .filter((p) => p.workspace_id === w.id)
                  .map((p) => (
                    <li key={p.id}>
                      {p.name} <span className="muted">({p.role})</span>
                    </li>
                  ))}
              </ul>
            </li>
          ))}
          {projects.data.data
            .filter((p) => !ws.some((w) => w.id === p.workspace_id))
            .map((p) => (
              <li key={p.id}>
                {p.name} <span className="muted">({p.role}, in another workspace)</span>
              </li>
            ))}
        </ul>
      )}
      {administered.length > 0 && <NewProjectForm workspaces={administered} />}
    </Section>
  );
}

/** The project's settings: plan and usage, footer address, sending rate, time zone and quiet hours; the account's workspaces and projects. */
export default function Settings() {
  const { project } = useProject();
  return (
    <>
      <PageHeader title="Settings" />
      {!canManage(project) && (
        <Notice>
          As a Member of {project.name} you see its settings; its Owners and Admins change them.
        </Notice>
      )}
      <div className="grid">
        <PlanCard />
        <FooterCard />
        <RateCard />
        <LocalTimeCard />
        <WorkspacesCard />
      </div>
    </>
  );
}
