import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { mailboxStatusQuery } from '../../api/mailbox.ts';

/**
 * Where the emailed code is when no relay is configured (shown when this browser may read it). It
 * opens in a new tab: the code form stays as it is, with what was typed (issue 48).
 */
export function MailboxHint() {
  const status = useQuery(mailboxStatusQuery);
  if (!status.data?.available) return null;
  return (
    <p className="muted small">
      No relay is set up, so this server keeps the mail it sends:{' '}
      <Link to="/mailbox" target="_blank" rel="noopener">
        open the dev mailbox
      </Link>{' '}
      (in a new tab, so this form stays) to read your code.
    </p>
  );
}
