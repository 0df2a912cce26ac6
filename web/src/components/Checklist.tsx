import type { ReactNode } from 'react';
import { shownInPeoplesWords } from '../api/words.ts';

/** What an item of a checklist says: passes, fails (with the fix), or waits on another item. */
export type CheckStatus = 'ok' | 'failing' | 'unchecked';

export interface CheckItem {
  key: string;
  label: string;
  status: CheckStatus;
  /** What passed, or what fails (the server's words). */
  message: ReactNode;
  /** Where to fix it: a link to the screen that does. */
  fix?: ReactNode;
}

const STATUS: Record<CheckStatus, { word: string; tone: string }> = {
  ok: { word: 'Done', tone: 'good' },
  failing: { word: 'To do', tone: 'bad' },
  unchecked: { word: 'Not checked yet', tone: 'muted' },
};

/** A list of checks, each with its status in words (not colour alone), its message and its fix. */
export function Checklist({ label, items }: { label: string; items: CheckItem[] }) {
  return (
    <ul className="checklist" aria-label={label}>
      {items.map((item) => {
        const status = STATUS[item.status];
        return (
          <li key={item.key} className={`check check-${item.status}`}>
            <p className="check-head">
              <span className={`badge badge-${status.tone}`}>{status.word}</span>{' '}
              <strong>{item.label}</strong>
            </p>
            <p className="small break">{shownInPeoplesWords(item.message)}</p>
            {item.fix && item.status !== 'ok' && <p className="small">{shownInPeoplesWords(item.fix)}</p>}
          </li>
        );
      })}
    </ul>
  );
}
