/** The bare address of `Name <address>` (or the input when it has no angle brackets). */
export function addressOf(mailbox: string): string {
  const match = /<([^<>]+)>\s*$/.exec(mailbox);
  return (match ? match[1] : mailbox).trim();
}
