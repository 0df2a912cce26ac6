import { Link } from '@tanstack/react-router';
import { PageHeader } from '../../components/PageHeader.tsx';

/** Any address the app does not know. */
export function NotFound() {
  return (
    <main id="main" className="public-card">
      <PageHeader title="Page not found" />
      <p>There is nothing at this address.</p>
      <p>
        <Link to="/">Go to the overview</Link>
      </p>
    </main>
  );
}
