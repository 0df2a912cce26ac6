/** The bare address of `Name <address>` (or the input when it has no angle brackets). */
export function addressOf(mailbox: string): string {
  const match = /<([^<>]+)>\s*$/.exec(mailbox);
  return (match ? match[1] : mailbox).trim();
}

export interface Mailbox {
  name: string;
  address: string;
}

/** Formats a mailbox for a header; nodemailer encodes non-ASCII names. */
export function formatMailbox(m: Mailbox): string {
  return m.name ? `${JSON.stringify(m.name)} <${m.address}>` : m.address;
}

/** The domain of an address: what follows its last `@` (the whole input when it has none). */
export function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** The local part of an address: what comes before its last `@` (the whole input when it has none). */
export function localPartOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? address : address.slice(0, at);
}
