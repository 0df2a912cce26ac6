import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { breaker, breakerQuery } from '../../api/breaker.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { useProject } from '../../project.tsx';

/**
 * What the circuit breaker stopped beyond one campaign or flow: a sending domain's marketing, or
 * the project's. Says why, and lets an admin resume it with a reason (recorded by the server).
 */
export function BreakerBanner() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const trips = useQuery(breakerQuery(project.id));
  const [reason, setReason] = useState('');
  const resume = useMutation({
    mutationFn: () => breaker.resume(project.id, reason.trim()),
    onSuccess: () => {
      setReason('');
      queryClient.invalidateQueries({ queryKey: ['project', project.id] });
    },
  });
  const stops = (trips.data?.data ?? []).filter(
    (t) => t.level === 'stop' && (t.scope === 'domain' || t.scope === 'project'),
  );
  if (stops.length === 0) return null;
  return (
    <section className="alert alert-warning" aria-labelledby="breaker-heading">
      <h2 id="breaker-heading">Marketing paused by the circuit breaker</h2>
      <ul>
        {stops.map((t) => (
          <li key={t.id}>
            {t.scope === 'project' ? 'All marketing of this project' : 'Marketing from a sending domain'}:{' '}
            {inPeoplesWords(t.reason)}.
          </li>
        ))}
      </ul>
      <p>
        Transactional mail still flows. Campaigns and flows it paused stay paused until each is resumed. A
        project admin resumes it, saying what was fixed:
      </p>
      <form
        aria-label="Resume marketing"
        onSubmit={(e) => {
          e.preventDefault();
          resume.mutate();
        }}
      >
        <Field
          label="Reason"
          required
          maxLength={1000}
          value={reason}
          onChange={(e) => setReason(e.target.value)}
        />
        <ErrorMessage error={resume.error} />
        <button type="submit" className="btn" disabled={resume.isPending || !reason.trim()}>
          {resume.isPending ? 'Resuming…' : 'Resume marketing'}
        </button>
      </form>
    </section>
  );
}
