import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import selfsigned from 'selfsigned';
import type { Config } from '../config.ts';
import { selfSignedFiles } from '../domain/emails/submission-address.ts';

export interface TlsPair {
  key: string;
  cert: string;
  /** Where the pair came from, for the startup log. */
  source: string;
}

/**
 * The certificate for STARTTLS and implicit TLS: POSTHORN_TLS_KEY/POSTHORN_TLS_CERT when set,
 * else a self-signed pair generated once into the data dir (clients must then skip verification:
 * fine for development, replace it in production).
 */
export async function loadTlsPair(config: Config): Promise<TlsPair> {
  if (config.tlsKeyFile || config.tlsCertFile) {
    if (!config.tlsKeyFile || !config.tlsCertFile)
      throw new Error('Set both POSTHORN_TLS_KEY and POSTHORN_TLS_CERT (PEM files), or neither');
    return {
      key: readFileSync(config.tlsKeyFile, 'utf8'),
      cert: readFileSync(config.tlsCertFile, 'utf8'),
      source: config.tlsCertFile,
    };
  }
  const { key: keyFile, cert: certFile } = selfSignedFiles(config);
  if (!existsSync(keyFile) || !existsSync(certFile)) {
    const notAfter = new Date();
    notAfter.setFullYear(notAfter.getFullYear() + 5);
    const pems = await selfsigned.generate([{ name: 'commonName', value: config.inboundHost }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: notAfter,
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: config.inboundHost },
            { type: 2, value: config.smtpHost },
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
          ],
        },
      ],
    });
    mkdirSync(path.dirname(keyFile), { recursive: true });
    writeFileSync(keyFile, pems.private, { mode: 0o600 });
    writeFileSync(certFile, pems.cert);
  }
  return {
    key: readFileSync(keyFile, 'utf8'),
    cert: readFileSync(certFile, 'utf8'),
    source: `${certFile} (self-signed)`,
  };
}
