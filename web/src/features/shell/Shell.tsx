import { useQuery } from '@tanstack/react-query';
import { Link, Outlet, useNavigate, useRouterState } from '@tanstack/react-router';
import { useEffect, useId, useRef, useState } from 'react';
import { type Session, sessionQuery } from '../../api/endpoints.ts';
import { mailboxStatusQuery } from '../../api/mailbox.ts';
import { routesReportQuery } from '../../api/operator.ts';
import { ProjectProvider, useProject } from '../../project.tsx';
import { useSignOut } from '../../sign-out.ts';

const NAV = [
  { to: '/', label: 'Overview', exact: true },
  { to: '/emails', label: 'Emails', exact: false },
  { to: '/keys', label: 'API keys', exact: false },
  { to: '/domains', label: 'Domains', exact: false },
  { to: '/smtp', label: 'SMTP', exact: false },
  { to: '/webhooks', label: 'Webhooks', exact: false },
  { to: '/suppressions', label: 'Suppressions', exact: false },
  { to: '/inbound', label: 'Inbound', exact: false },
  { to: '/contacts', label: 'Contacts', exact: false },
  { to: '/lists', label: 'Lists', exact: false },
  { to: '/segments', label: 'Segments', exact: false },
  { to: '/topics', label: 'Topics', exact: false },
  { to: '/templates', label: 'Templates', exact: false },
  { to: '/campaigns', label: 'Campaigns', exact: false },
  { to: '/flows', label: 'Flows', exact: false },
  { to: '/reports', label: 'Reports', exact: false },
  { to: '/members', label: 'Members', exact: false },
  { to: '/settings', label: 'Settings', exact: false },
  { to: '/account', label: 'Account', exact: false },
] as const;

/** The lists whose pages under them (`/emails/<id>`, ...) name one project's resource. */
const DETAIL_SECTIONS = [
  '/emails',
  '/contacts',
  '/segments',
  '/domains',
  '/webhooks',
  '/inbound',
  '/templates',
  '/campaigns',
  '/flows',
] as const;

function ProjectSwitcher() {
  const { project, session, choose } = useProject();
  const navigate = useNavigate();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const id = useId();
  return (
    <div className="switcher">
      <label htmlFor={id}>Project</label>
      <select
        id={id}
        value={project.id}
        onChange={(e) => {
          choose(e.target.value);
          // a detail page belongs to the old project: go to the same list in the new one
          const section = DETAIL_SECTIONS.find((s) => pathname.startsWith(`${s}/`));
          if (section) navigate({ to: section });
        }}
      >
        {session.projects.map((p) => (
          <option key={p.id} value={p.id}>
            {p.name} ({p.role})
          </option>
        ))}
      </select>
    </div>
  );
}

function SignOut({ email }: { email: string }) {
  const navigate = useNavigate();
  const signOut = useSignOut(() => navigate({ to: '/sign-in' }));
  return (
    <div className="account">
      <span className="account-email" title={email}>
        {email}
      </span>
      <button type="button" className="btn" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        Sign out
      </button>
    </div>
  );
}

/** The dev mailbox, when this browser may read it (no relay configured; by default on the server's machine). */
function MailboxNavItem({ onChoose }: { onChoose: () => void }) {
  const status = useQuery(mailboxStatusQuery);
  if (!status.data?.available) return null;
  return (
    <li>
      <Link to="/mailbox" onClick={onChoose}>
        Mailbox
      </Link>
    </li>
  );
}

/**
 * The server's own screens, apart from the project's: for its operator only (the session says so),
 * and the Routes screen where this server shows it (a browser on its machine).
 */
function ServerNav({ onChoose }: { onChoose: () => void }) {
  const report = useQuery(routesReportQuery);
  if (!report.data) return null;
  return (
    <>
      <p className="nav-heading" id="nav-server">
        This server
      </p>
      <ul aria-labelledby="nav-server">
        <li>
          <Link to="/routes" activeProps={{ 'aria-current': 'page', className: 'active' }} onClick={onChoose}>
            Routes
          </Link>
        </li>
        <li>
          <Link
            to="/readiness"
            activeProps={{ 'aria-current': 'page', className: 'active' }}
            onClick={onChoose}
          >
            Production readiness
          </Link>
        </li>
      </ul>
    </>
  );
}

/**
 * The navigation's menu button, shown on a phone only (styles.css): the navigation folds away
 * there and opens under the top bar. Escape closes it and gives the focus back to the button; choosing
 * a screen closes it.
 */
function useMenu() {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      button.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [open]);
  return { open, setOpen, button };
}

function Frame({ session }: { session: Session }) {
  const menu = useMenu();
  const navId = useId();
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          ref={menu.button}
          type="button"
          className="btn menu-button"
          aria-expanded={menu.open}
          aria-controls={navId}
          onClick={() => menu.setOpen(!menu.open)}
        >
          <span className="menu-icon" aria-hidden="true" />
          Menu
        </button>
        <Link to="/" className="brand">
          <img className="brand-mark" src="./favicon.svg" alt="" width="24" height="24" /> Posthorn
        </Link>
        {session.projects.length > 0 && <ProjectSwitcher />}
        <SignOut email={session.account.email} />
      </header>
      <nav id={navId} className={menu.open ? 'nav open' : 'nav'} aria-label="Main">
        <ul>
          {NAV.map((item) => (
            <li key={item.to}>
              <Link
                to={item.to}
                activeOptions={{ exact: item.exact, includeSearch: false }}
                activeProps={{ 'aria-current': 'page', className: 'active' }}
                onClick={() => menu.setOpen(false)}
              >
                {item.label}
              </Link>
            </li>
          ))}
          <MailboxNavItem onChoose={() => menu.setOpen(false)} />
        </ul>
        {session.operator && <ServerNav onChoose={() => menu.setOpen(false)} />}
      </nav>
      <main id="main" className="content" tabIndex={-1}>
        {session.projects.length > 0 ? (
          <Outlet />
        ) : (
          <p>You are not a member of any project yet. Ask an Owner or Admin of a project to invite you.</p>
        )}
      </main>
    </div>
  );
}

/** The signed-in frame: project switcher, navigation, sign out, and the current screen. */
export default function Shell() {
  const { data: session } = useQuery(sessionQuery);
  const navigate = useNavigate();
  const href = useRouterState({ select: (s) => s.location.href });
  useEffect(() => {
    // the session ended (expired, revoked, signed out elsewhere): sign in again, then come back
    if (session === null) navigate({ to: '/sign-in', search: { next: href } });
  }, [session, navigate, href]);
  if (!session) return null;
  return (
    <ProjectProvider session={session}>
      <Frame session={session} />
    </ProjectProvider>
  );
}
