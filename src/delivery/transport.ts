/** A message ready to leave: envelope plus the exact bytes. */
export interface OutboundMessage {
  from: string;
  to: string[];
  raw: Buffer;
  messageId: string;
  /** Which try at this message this is (1 for the first); the same message keeps its Message-ID. */
  attempt: number;
}

/** What the hop a message was handed to answered for one recipient. */
export interface RecipientResult {
  recipient: string;
  /** Taken by the hop; else refused: for good when `responseCode` is 5xx, for now otherwise. */
  accepted: boolean;
  /** The hop is the last one (the dev mailbox, the simulator): accepted means delivered, not sent on. */
  final: boolean;
  responseCode?: number;
  response: string;
  /** Answered on this machine by the simulator: recorded like any answer, never added to the suppression list. */
  simulated?: boolean;
  /** A spam complaint that followed the acceptance (the simulator's `complained@`), with its text. */
  complaint?: string;
}

export interface DeliveryResult {
  /** The hop's reply to the message as a whole. */
  response: string;
  /** One answer per recipient handed over. */
  recipients: RecipientResult[];
}

/** A failure to hand over a message; `permanent` (5xx) means retrying will not help. */
export class DeliveryError extends Error {
  readonly permanent: boolean;
  readonly responseCode: number | undefined;
  readonly response: string;
  /** Recipients answered on this machine (the simulator's) before the hand-over of the others failed. */
  readonly answered: RecipientResult[];
  /**
   * A permanent refusal of the recipients or of the message (RCPT TO, DATA): they bounce and are
   * suppressed. False when the hop refused the sender (MAIL FROM): the message fails, and its
   * recipients are not to blame.
   */
  readonly recipientsAtFault: boolean;
  constructor(
    message: string,
    opts: {
      permanent: boolean;
      responseCode?: number;
      response?: string;
      answered?: RecipientResult[];
      recipientsAtFault?: boolean;
    },
  ) {
    super(message);
    this.permanent = opts.permanent;
    this.recipientsAtFault = opts.recipientsAtFault ?? true;
    this.responseCode = opts.responseCode;
    this.response = opts.response ?? message;
    this.answered = opts.answered ?? [];
  }
}

/** Any failure of a send as a DeliveryError: what is not one already (a bug, a lost socket) is temporary. */
export function deliveryErrorOf(err: unknown): DeliveryError {
  return err instanceof DeliveryError ? err : new DeliveryError((err as Error).message, { permanent: false });
}

/** A 5xx reply: the hop refused for good, trying again will not help. */
export function isPermanent(responseCode: number | undefined): boolean {
  return (responseCode ?? 0) >= 500;
}

/** Every way mail leaves Posthorn (SMTP relay, dev mailbox, later direct MX or providers) has this shape. */
export interface Transport {
  readonly name: string;
  send(message: OutboundMessage): Promise<DeliveryResult>;
  close(): Promise<void>;
}
