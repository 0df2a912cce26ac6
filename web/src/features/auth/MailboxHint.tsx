import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { mailboxStatusQuery } from '../../api/mailbox.ts';

/** Where the emailed code is when no relay is configured (shown when this browser may read it). */
export function MailboxHint() {
  const status = useQuery(mailboxStatusQuery);
  if (!status.data?.available) return null;
  return (
    <p className="muted small">
      No relay is set up, so this server keeps the mail it sends:{' '}
      <Link to="/mailbox">open the dev mailbox</Link> to read your code.
    </p>
  );
}
