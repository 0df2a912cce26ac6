import type { ProviderTags } from './routes/tags.ts';
import type { Claimant } from './session-pool.ts';

/** A message ready to leave: envelope plus the exact bytes. */
export interface OutboundMessage {
  from: string;
  to: string[];
  raw: Buffer;
  messageId: string;
  /** Which try at this message this is (1 for the first); the same message keeps its Message-ID. */
  attempt: number;
  /** What the route tells its provider about the message (in the route's dialect). */
  tags: ProviderTags;
  /**
   * Its turn for a session (session-pool.ts): the service's own mail first, then transactional,
   * then bulk, fair between projects. Absent: as its tags' stream says.
   */
  claimant?: Claimant;
  /**
   * Called when the message stops waiting in the process's room: a session (or the provider's API
   * call) starts for it, or it joins its site's own bounded queue (a direct route's lane). The
   * delivery scheduler bounds what waits before that, not what is in a session or a site's queue.
   */
  onSession?: () => void;
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
  /**
   * A permanent refusal's kind: `hard` (the address: suppressed, the default) or `block` (the
   * sender or the content, as a mail server refusing MAIL FROM or DATA: not the recipient's fault,
   * so not suppressed).
   */
  bounceType?: 'hard' | 'block';
  /**
   * Not tried: the route held the recipient back until then (ms since 1970; a site that asked to
   * slow down, an hourly pace with no slot soon). A message all of whose recipients are held goes
   * back to the queue for that time without spending an attempt.
   */
  heldUntil?: number;
  /**
   * Who held it: `site`, a site that asked to slow down (recorded on the message's timeline with
   * the site's answer); `posthorn`, this process's own backlog for the site (a pace, a full queue).
   */
  heldBy?: 'site' | 'posthorn';
  /** Deferred: how long the route would have the next try wait (its site's retry schedule). */
  retryAfterMs?: number;
  /** Where the attempt went (a direct route): the MX host, its address, the source address, TLS. */
  via?: {
    mx: string;
    address: string;
    source: string | null;
    tls: string | null;
    /** The recipient domain's MTA-STS mode, when it has a policy other than `none`. */
    mta_sts?: 'enforce' | 'testing';
  };
}

export interface DeliveryResult {
  /** The hop's reply to the message as a whole. */
  response: string;
  /** The provider's own id for the message (Amazon SES's MessageId), which its feedback names. */
  providerMessageId?: string;
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
  /**
   * The route did not take the message (no connection, the greeting or login refused, the
   * connection gone before the message was sent): the rule's next route may be tried at once.
   */
  readonly notTaken: boolean;
  constructor(
    message: string,
    opts: {
      permanent: boolean;
      responseCode?: number;
      response?: string;
      answered?: RecipientResult[];
      recipientsAtFault?: boolean;
      notTaken?: boolean;
    },
  ) {
    super(message);
    this.permanent = opts.permanent;
    this.recipientsAtFault = opts.recipientsAtFault ?? true;
    this.notTaken = opts.notTaken ?? false;
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

/** Every way mail leaves Posthorn (SMTP relay, Amazon SES, dev mailbox, later direct MX) has this shape. */
export interface Transport {
  readonly name: string;
  send(message: OutboundMessage): Promise<DeliveryResult>;
  /** Whether the way out works again (for a route marked unhealthy); absent: it cannot fail so. */
  probe?(): Promise<void>;
  close(): Promise<void>;
}

/** Who a message is in the session pools: as it says, else as its tags' stream and project say. */
export function claimantOf(message: Pick<OutboundMessage, 'claimant' | 'tags'>): Claimant {
  return (
    message.claimant ?? {
      urgency: message.tags.stream === 'transactional' ? 'transactional' : 'bulk',
      project: message.tags.project,
    }
  );
}
