import path from 'node:path';
import type { Config } from '../../config.ts';
import { isLoopbackHost } from '../webhooks/target.ts';

/** The SMTP submission ports to show: those this process listens on, or the configured ones. */
export interface SmtpPorts {
  port: number;
  tls_port: number | null;
}

/** Where the self-signed pair is kept when POSTHORN_TLS_KEY and POSTHORN_TLS_CERT are unset. */
export function selfSignedFiles(config: Pick<Config, 'dataDir'>): { key: string; cert: string } {
  const dir = path.join(config.dataDir, 'tls');
  return { key: path.join(dir, 'self-signed.key'), cert: path.join(dir, 'self-signed.crt') };
}

/**
 * Whether the submission server's name is one for this machine only (localhost, *.localhost, a
 * loopback address): the server is tried locally, and a name such as smtp.posthorn.localhost
 * may not resolve in the client's resolver.
 */
function isLocalName(config: Pick<Config, 'smtpHost'>): boolean {
  return isLoopbackHost(config.smtpHost);
}

/** The address the submission server listens on, as a client on this machine reaches it. */
function listenAddress(config: Pick<Config, 'host'>): string {
  return config.host === '' || config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
}

/**
 * How a client reaches SMTP submission (GET /me's `smtp`): POSTHORN_SMTP_HOST, or on a server tried
 * locally the address it listens on; the ports; and the certificate it presents, the self-signed
 * one named by its file on a local server so that a client there can trust it.
 */
export function submissionAddress(
  config: Pick<Config, 'smtpHost' | 'host' | 'dataDir' | 'tlsCertFile'>,
  ports: SmtpPorts,
) {
  const local = isLocalName(config);
  const selfSigned = config.tlsCertFile === undefined;
  return {
    host: local ? listenAddress(config) : config.smtpHost,
    ...ports,
    certificate: {
      self_signed: selfSigned,
      path: selfSigned && local ? selfSignedFiles(config).cert : null,
    },
  };
}
