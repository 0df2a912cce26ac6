import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useId } from 'react';
import { type AccountStatus, accountStatusQuery } from '../../api/endpoints.ts';
import { CopyButton, CopyField } from '../../components/CopyButton.tsx';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';
import { type ExampleFacts, nodemailerExample, smtplibExample, swaksExample } from './examples.ts';

/** A host a client reaches on this computer only: the server is tried locally. */
const isLocalHost = (host: string) => host === 'localhost' || host === '::1' || host.startsWith('127.');

/** The submission server's address, from the account status. */
function ServerCard({ smtp }: { smtp: AccountStatus['smtp'] }) {
  return (
    <Section title="Server">
      <CopyField
        label="Host"
        value={smtp.host}
        hint={
          isLocalHost(smtp.host)
            ? 'This server runs on your own computer: connect to the address it listens on.'
            : undefined
        }
      />
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

/** The certificate when the server made its own: which file to trust, or checks off for local tries. */
function CertificateCard({ certificate }: { certificate: AccountStatus['smtp']['certificate'] }) {
  if (!certificate.self_signed) return null;
  return (
    <Section title="Certificate">
      <p>
        This server uses a certificate it made itself (self-signed), so mail clients refuse it until they are
        told to trust it.
      </p>
      {certificate.path !== null ? (
        <>
          <CopyField
            label="Certificate file"
            value={certificate.path}
            hint="On this computer. The examples below trust this file."
          />
          <p>
            For local tries only, you can turn the certificate check off instead: each example shows how in a
            comment.
          </p>
        </>
      ) : (
        <p>
          For local tries only, turn the certificate check off as the examples show in a comment. For real
          use, whoever runs this Posthorn sets its own certificate.
        </p>
      )}
      <p className="muted small">
        A real certificate is set with <code>POSTHORN_TLS_CERT</code> and <code>POSTHORN_TLS_KEY</code>.
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
        Each message is handled as an email sent through the API (transactional stream): the same checks,
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

/** One example program, named by its heading, with a button that copies it whole. */
function ExampleCode({ title, name, code }: { title: string; name: string; code: string }) {
  const id = useId();
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      <pre className="source">{code}</pre>
      <div className="actions">
        <CopyButton value={code} label={`Copy the ${name} example`} />
      </div>
    </section>
  );
}

function Examples(facts: ExampleFacts) {
  return (
    <Section title="Example" wide>
      <p>
        Each example sends one message to {facts.smtp.host} on port {facts.smtp.port}, with the API key read
        from the environment variable POSTHORN_API_KEY. Put your own address in To.
      </p>
      <ExampleCode title="Node.js with nodemailer" name="nodemailer" code={nodemailerExample(facts)} />
      <ExampleCode title="Python with smtplib" name="Python" code={smtplibExample(facts)} />
      <ExampleCode title="swaks, from a shell" name="swaks" code={swaksExample(facts)} />
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
            <CertificateCard certificate={status.smtp.certificate} />
            <BehaviourCard status={status} />
            <Examples smtp={status.smtp} from={status.sending.default_from} />
          </div>
        )}
      </Loaded>
    </>
  );
}
