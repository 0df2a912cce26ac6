/** A delivery status notification (RFC 3464) as a remote MTA sends it to a message's return path. */
export function dsn(opts: {
  recipient: string;
  status: string;
  diagnostic: string;
  original: string;
  action?: string;
}): string {
  return [
    'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)',
    'To: bounce-handler',
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="BOUNDARY"',
    '',
    '--BOUNDARY',
    'Content-Type: text/plain',
    '',
    'I am sorry to have to inform you that your message could not be delivered.',
    '',
    '--BOUNDARY',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    '',
    `Final-Recipient: rfc822; ${opts.recipient}`,
    `Action: ${opts.action ?? 'failed'}`,
    `Status: ${opts.status}`,
    'Remote-MTA: dns; mail.example.org',
    `Diagnostic-Code: smtp; ${opts.diagnostic}`,
    '',
    '--BOUNDARY',
    'Content-Type: text/rfc822-headers',
    '',
    opts.original,
    '',
    '--BOUNDARY--',
    '',
  ].join('\r\n');
}
