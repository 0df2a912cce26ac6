import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type DomainDmarc, dmarcLabels, domainDmarcQuery } from '../../api/sending.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { ConfirmButton, DialogButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatNumber } from '../../components/format.ts';
import { useProject } from '../../project.tsx';

/**
 * The sources that sent as a domain, grouped as Posthorn's own, labelled and unknown, with a form
 * to label an unknown one (its address, or its network) and the labels given, each removable.
 */

type Source = DomainDmarc['sources'][number];
type Label = DomainDmarc['labels'][number];

const KIND: Record<Source['kind'], string> = {
  posthorn: 'Posthorn',
  labelled: 'Labelled',
  unknown: 'Unknown',
};
const percent = (n: number, of: number) => (of === 0 ? '—' : `${((n / of) * 100).toFixed(1)} %`);

function useRefresh(domainId: string) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: domainDmarcQuery(project.id, domainId).queryKey });
}

function LabelForm({ domainId, source, close }: { domainId: string; source: string; close(): void }) {
  const { project } = useProject();
  const refresh = useRefresh(domainId);
  const [address, setAddress] = useState(source);
  const [label, setLabel] = useState('');
  const save = useMutation({
    mutationFn: () => dmarcLabels.put(project.id, domainId, { source: address, label }),
    onSuccess: async () => {
      await refresh();
      close();
    },
  });
  return (
    <ActionForm label="Label a source" action={save} submit="Save label" pendingLabel="Saving…" close>
      <Field
        label="Address or network"
        hint="One address, or its network (203.0.113.0/24) to name every address of a service"
        value={address}
        onChange={(e) => setAddress(e.target.value)}
        required
      />
      <Field
        label="Label"
        hint='What sends from it, for example "our CRM"'
        value={label}
        onChange={(e) => setLabel(e.target.value)}
        maxLength={100}
        required
        autoFocus
      />
    </ActionForm>
  );
}

function RemoveLabel({ domainId, label }: { domainId: string; label: Label }) {
  const { project } = useProject();
  const refresh = useRefresh(domainId);
  const remove = useMutation({
    mutationFn: () => dmarcLabels.remove(project.id, domainId, label.id),
    onSuccess: refresh,
  });
  return (
    <ConfirmButton
      label="Remove"
      named={label.label}
      className="btn small"
      title={`Remove the label "${label.label}"?`}
      description={`Mail from ${label.source} counts as an unknown source again.`}
      confirm="Remove label"
      action={remove}
    />
  );
}

export function DmarcSources({
  dmarc,
  domainId,
  manage,
}: {
  dmarc: DomainDmarc;
  domainId: string;
  manage: boolean;
}) {
  const g = dmarc.groups;
  return (
    <>
      <h2>Sending sources</h2>
      <p className="muted">
        Posthorn's own: {g.posthorn.sources} ({formatNumber(g.posthorn.messages)} messages,{' '}
        {percent(g.posthorn.aligned, g.posthorn.messages)} passed) · labelled: {g.labelled.sources} (
        {formatNumber(g.labelled.messages)}, {percent(g.labelled.aligned, g.labelled.messages)}) · unknown:{' '}
        {g.unknown.sources} ({formatNumber(g.unknown.messages)},{' '}
        {percent(g.unknown.aligned, g.unknown.messages)})
      </p>
      <DataTable<Source>
        caption="The addresses that sent mail as the domain"
        rowKey={(s) => s.source_ip}
        rows={dmarc.sources}
        columns={[
          { label: 'Address', cell: (s) => <code>{s.source_ip}</code> },
          { label: 'Source', cell: (s) => (s.kind === 'unknown' ? KIND.unknown : `${s.name}`) },
          { label: 'Messages', cell: (s) => formatNumber(s.messages) },
          { label: 'Passed DMARC', cell: (s) => percent(s.aligned, s.messages) },
          { label: 'Reporters', cell: (s) => formatNumber(s.reporters) },
          {
            label: 'Label',
            cell: (s) =>
              manage && s.kind === 'unknown' ? (
                <DialogButton
                  label="Label"
                  named={s.source_ip}
                  className="btn small"
                  title={`Label ${s.source_ip}`}
                  description="A labelled source is known: it counts toward the policy coach and raises no alert."
                >
                  {(close) => <LabelForm domainId={domainId} source={s.source_ip} close={close} />}
                </DialogButton>
              ) : null,
          },
        ]}
      />
      {dmarc.labels.length > 0 && (
        <>
          <h3>Your labels</h3>
          <DataTable<Label>
            caption="Your labels"
            rowKey={(l) => l.id}
            rows={dmarc.labels}
            columns={[
              { label: 'Address or network', cell: (l) => <code>{l.source}</code> },
              { label: 'Label', cell: (l) => l.label },
              { label: '', cell: (l) => (manage ? <RemoveLabel domainId={domainId} label={l} /> : null) },
            ]}
          />
        </>
      )}
    </>
  );
}
