/** A message ready to leave: envelope plus the exact bytes. */
export interface OutboundMessage {
  from: string;
  to: string[];
  raw: Buffer;
  messageId: string;
}

export interface DeliveryResult {
  accepted: string[];
  rejected: string[];
  /** Why each rejected recipient was refused (RCPT TO replies). */
  rejectedErrors?: { recipient: string; responseCode?: number; response: string }[];
  response: string;
}

/** A failure to hand over a message; `permanent` (5xx) means retrying will not help. */
export class DeliveryError extends Error {
  readonly permanent: boolean;
  readonly responseCode: number | undefined;
  readonly response: string;
  constructor(message: string, opts: { permanent: boolean; responseCode?: number; response?: string }) {
    super(message);
    this.permanent = opts.permanent;
    this.responseCode = opts.responseCode;
    this.response = opts.response ?? message;
  }
}

/** Every way mail leaves Posthorn (SMTP relay, dev mailbox, later direct MX or providers) has this shape. */
export interface Transport {
  readonly name: string;
  send(message: OutboundMessage): Promise<DeliveryResult>;
  close(): Promise<void>;
}
