import type { AccountStatus } from '../../api/endpoints.ts';

/** What the examples are written from: the server's address and certificate, and a From address. */
export interface ExampleFacts {
  smtp: AccountStatus['smtp'];
  from: string;
}

/** Where the examples send: a person puts their own address there. */
export const EXAMPLE_TO = 'you@example.com';
export const EXAMPLE_SUBJECT = 'Hello from Posthorn';
const BODY = 'Sent through SMTP submission.';

/** A string literal of JavaScript or Python (a JSON string is both). */
const literal = (value: string) => JSON.stringify(value);

/** A word for a POSIX shell, single-quoted unless it needs no quotes. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The lines a nodemailer transport adds for the server's certificate. */
function nodemailerTls(certificate: AccountStatus['smtp']['certificate']): string[] {
  if (certificate.path !== null)
    return [
      "  // the server's certificate is self-signed: trust its file on this computer",
      `  tls: { ca: readFileSync(${literal(certificate.path)}) },`,
      '  // local tries only, instead of the line above: tls: { rejectUnauthorized: false },',
    ];
  if (certificate.self_signed)
    return [
      "  // the server's certificate is self-signed; for local tries only:",
      '  // tls: { rejectUnauthorized: false },',
    ];
  return [];
}

/** Node.js with nodemailer, as a whole program (an ES module). */
export function nodemailerExample({ smtp, from }: ExampleFacts): string {
  return [
    '// Node.js with nodemailer (npm install nodemailer): save as send.mjs, then run',
    '// POSTHORN_API_KEY=your_key node send.mjs',
    ...(smtp.certificate.path !== null ? ["import { readFileSync } from 'node:fs';"] : []),
    "import nodemailer from 'nodemailer';",
    '',
    'const transport = nodemailer.createTransport({',
    `  host: ${literal(smtp.host)},`,
    `  port: ${smtp.port},`,
    '  secure: false, // STARTTLS',
    '  requireTLS: true,',
    "  auth: { user: 'posthorn', pass: process.env.POSTHORN_API_KEY },",
    ...nodemailerTls(smtp.certificate),
    '});',
    '',
    'const info = await transport.sendMail({',
    `  from: ${literal(from)},`,
    `  to: ${literal(EXAMPLE_TO)},`,
    `  subject: ${literal(EXAMPLE_SUBJECT)},`,
    `  text: ${literal(BODY)},`,
    '});',
    'console.log(info.response); // 250 2.0.0 Accepted: queued as <email id>',
    '',
  ].join('\n');
}

/** The lines of the Python example that make its TLS context. */
function pythonContext(certificate: AccountStatus['smtp']['certificate']): string[] {
  if (certificate.path !== null)
    return [
      "# the server's certificate is self-signed: trust its file on this computer",
      `context = ssl.create_default_context(cafile=${literal(certificate.path)})`,
      '# local tries only, instead of the line above: context = ssl._create_unverified_context()',
    ];
  if (certificate.self_signed)
    return [
      'context = ssl.create_default_context()',
      "# the server's certificate is self-signed; for local tries only:",
      '# context = ssl._create_unverified_context()',
    ];
  return ['context = ssl.create_default_context()'];
}

/** Python with smtplib from the standard library. */
export function smtplibExample({ smtp, from }: ExampleFacts): string {
  return [
    '# Python with smtplib: save as send.py, then run',
    '# POSTHORN_API_KEY=your_key python3 send.py',
    'import os',
    'import smtplib',
    'import ssl',
    'from email.message import EmailMessage',
    '',
    'message = EmailMessage()',
    `message["From"] = ${literal(from)}`,
    `message["To"] = ${literal(EXAMPLE_TO)}`,
    `message["Subject"] = ${literal(EXAMPLE_SUBJECT)}`,
    `message.set_content(${literal(BODY)})`,
    '',
    ...pythonContext(smtp.certificate),
    `with smtplib.SMTP(${literal(smtp.host)}, ${smtp.port}) as client:`,
    '    client.starttls(context=context)',
    '    client.login("posthorn", os.environ["POSTHORN_API_KEY"])',
    '    client.send_message(message)',
    '',
  ].join('\n');
}

/** The comment over the swaks command about the certificate. */
function swaksComment(certificate: AccountStatus['smtp']['certificate']): string[] {
  if (certificate.path !== null)
    return [
      '# local tries only: swaks checks no certificate unless given --tls-verify; to check this',
      `# server's self-signed one, add --tls-verify --tls-ca-path ${shellWord(certificate.path)}`,
    ];
  if (certificate.self_signed)
    return ["# the server's certificate is self-signed: swaks checks none unless given --tls-verify"];
  return ['# add --tls-verify to have swaks check the certificate'];
}

/** swaks, the Swiss Army Knife for SMTP, from a shell. */
export function swaksExample({ smtp, from }: ExampleFacts): string {
  return [
    '# swaks from a shell, with the key in POSTHORN_API_KEY',
    ...swaksComment(smtp.certificate),
    `swaks --server ${shellWord(smtp.host)} --port ${smtp.port} --tls \\`,
    '  --auth-user posthorn --auth-password "$POSTHORN_API_KEY" \\',
    `  --from ${shellWord(from)} --to ${shellWord(EXAMPLE_TO)} \\`,
    `  --header ${shellWord(`Subject: ${EXAMPLE_SUBJECT}`)} --body ${shellWord(BODY)}`,
    '',
  ].join('\n');
}
