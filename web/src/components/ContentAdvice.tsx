import { useQuery } from '@tanstack/react-query';
import { api, projectQuery, type Schemas } from '../api/client.ts';
import { shownInPeoplesWords } from '../api/words.ts';
import { ErrorMessage } from './Alert.tsx';

/**
 * Advice on a message before it is sent (alt text, heavy images, Gmail's clipping, broken links,
 * the spam score), for a campaign's "Before sending" card and the template editor. Advice only: a
 * warning never stops a send.
 */

type ContentChecks = Schemas['ContentChecks'];
type Check = ContentChecks['checks'][number];

const LABEL: Record<Check['id'], string> = {
  alt_text: 'Alt text of images',
  image_size: 'Image sizes',
  html_size: 'Message size',
  links: 'Links',
  spam_score: 'Spam score',
};
const STATUS: Record<Check['status'], { word: string; tone: string }> = {
  ok: { word: 'Fine', tone: 'good' },
  warning: { word: 'Worth a look', tone: 'warn' },
  skipped: { word: 'Not checked', tone: 'muted' },
};

export const campaignAdviceQuery = (project: string, id: string, key: string) =>
  projectQuery(project, ['campaign', id, 'content-checks', key], () =>
    api.get('/v1/campaigns/{id}/content-checks', { project, path: { id } }),
  );

export const templateAdviceQuery = (project: string, id: string, key: string) =>
  projectQuery(project, ['template', id, 'content-checks', key], () =>
    api.get('/v1/templates/{id}/checks', { project, path: { id } }),
  );

/** The checks as a list, each with its status in words, and how long they take said while they run. */
export function ContentAdvice({
  checks,
  error,
  pending,
}: {
  checks?: ContentChecks;
  error: unknown;
  pending: boolean;
}) {
  return (
    <div className="content-advice">
      <h3>Advice on the message</h3>
      {pending && <p className="muted small">Checking images and links…</p>}
      <ErrorMessage error={error} />
      {checks && (
        <ul className="checklist" aria-label="Advice on the message">
          {checks.checks.map((c) => (
            <li
              key={c.id}
              className={`check check-${c.status === 'warning' ? 'failing' : c.status === 'ok' ? 'ok' : 'unchecked'}`}
            >
              <p className="check-head">
                <span className={`badge badge-${STATUS[c.status].tone}`}>{STATUS[c.status].word}</span>{' '}
                <strong>{LABEL[c.id]}</strong>
              </p>
              <p className="small break">{shownInPeoplesWords(c.message)}</p>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A campaign's advice, as it was last saved. */
export function CampaignAdvice({
  project,
  campaignId,
  savedAt,
}: {
  project: string;
  campaignId: string;
  savedAt: string;
}) {
  const advice = useQuery(campaignAdviceQuery(project, campaignId, savedAt));
  return <ContentAdvice checks={advice.data} error={advice.error} pending={advice.isPending} />;
}

/** A template's advice, as it was last saved. */
export function TemplateAdvice({
  project,
  templateId,
  savedAt,
}: {
  project: string;
  templateId: string;
  savedAt: string;
}) {
  const advice = useQuery(templateAdviceQuery(project, templateId, savedAt));
  return <ContentAdvice checks={advice.data} error={advice.error} pending={advice.isPending} />;
}
