import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type AccountStatus, accountStatusQuery } from '../../api/endpoints.ts';
import { CopyField } from '../../components/CopyButton.tsx';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

/** The submission server's address, from GET /v1/me. */
function ServerCard({ smtp }: { smtp: AccountStatus['smtp'] }) {
  return (
    <Section title="Server">
      <CopyField label="Host" value={smtp.host} />
      <CopyField
        label="Port"
        value={String(smtp.port)}
        hint="STARTTLS (upgrade the connection, then AUTH)."
      />
      {smtp.tls_port !== null && (
        <CopyField label="TLS port" value={String(smtp.tls_port)} hint="Implicit TLS from the first byte." />
      )}
      <p>Encryption is required: AUTH is offered only once the connection is encrypted.</p>
      <p className="muted small">
        Whoever runs this Posthorn sets these with <code>POSTHORN_SMTP_HOST</code>,{' '}
        <code>POSTHORN_SMTP_PORT</code> and <code>POSTHORN_SMTP_TLS_PORT</code>.
      </p>
    </Section>
  );
}

function SignInCard({ projectId }: { projectId: string }) {
  return (
    <Section title="Username and password">
      <p>
        The password is an <strong>API key</strong> of this project (<code>ph_…</code>).{' '}
        <Link to="/keys">Create one under API keys</Link>: the key is shown once, so copy it into your SMTP
        settings then. Revoking the key stops its SMTP logins at once, also on open connections.
      </p>
      <CopyField
        label="Username"
        value="posthorn"
        hint="With a project key the username is not checked: any name works, “posthorn” is the convention."
      />
      <CopyField
        label="Username for an all-access key"
        copyLabel="Copy project id"
        value={projectId}
        hint="An all-access key reaches every project you administer: the username names this project's id."
      />
      <p className="muted small">Authentication methods: PLAIN and LOGIN.</p>
    </Section>
  );
}

function BehaviourCard({ status }: { status: AccountStatus }) {
  const domains = status.sending.verified_domains;
  return (
    <Section title="What happens to a message" wide>
      <p>
        Each message takes the path of <code>POST /v1/emails</code> (transactional stream): the same checks,
        suppressions, DKIM signature and statuses, and it appears under Emails. The reply names it:{' '}
        <code>250 2.0.0 Accepted: queued as &lt;email id&gt;</code>.
      </p>
      <p>
        The From address must be on a verified domain
        {domains.length > 0 ? ` (${domains.join(', ')})` : ''}, or <code>{status.sending.default_from}</code>.{' '}
        <Link to="/domains">Manage domains</Link>.
      </p>
      <ul className="plain-list">
        <li>
          <code>535</code>: the key is wrong, revoked or expired.
        </li>
        <li>
          <code>550</code>: refused, with the reason (unconfirmed account, unverified From domain, plan
          allowance).
        </li>
        <li>
          <code>451</code>: try again later (the shared domain's daily cap).
        </li>
        <li>
          <code>552</code>: over 40 MB; <code>452</code>: past 50 recipients.
        </li>
      </ul>
    </Section>
  );
}

function Example({ smtp }: { smtp: AccountStatus['smtp'] }) {
  const code = `// Node.js with nodemailer
const transport = nodemailer.createTransport({
  host: '${smtp.host}',
  port: ${smtp.port},
  secure: false,      // STARTTLS
  requireTLS: true,
  auth: { user: 'posthorn', pass: process.env.POSTHORN_API_KEY },
});`;
  return (
    <Section title="Example" wide>
      <pre className="source">{code}</pre>
    </Section>
  );
}

/** How to send through SMTP submission: host, ports, username, and an API key as the password. */
export default function Smtp() {
  const { project } = useProject();
  const me = useQuery(accountStatusQuery(project.id));
  return (
    <>
      <PageHeader title="SMTP" />
      <p className="muted">
        Send from any application or library that speaks SMTP, with an API key as the password.
      </p>
      <Loaded query={me}>
        {(status) => (
          <div className="detail">
            <ServerCard smtp={status.smtp} />
            <SignInCard projectId={project.id} />
            <BehaviourCard status={status} />
            <Example smtp={status.smtp} />
          </div>
        )}
      </Loaded>
    </>
  );
}
