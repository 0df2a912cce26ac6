import { ValidationError } from '../core/errors.ts';
import { MAX_MESSAGE_BYTES } from './validate.ts';

/**
 * What the attachments given by `path` may take of the server (issue 47): one request fetches at
 * most FETCHES_PER_REQUEST files at once and the process FETCHES_PER_PROCESS (a file waits for a
 * place in both), all of a request's files share one deadline, and the bytes are counted as they
 * arrive, base64-encoded as the message will carry them: a message stops at the 40 MB it may be,
 * a request at REQUEST_FETCH_BYTES, the moment either is passed, its other fetches cut off.
 */

/** The one deadline for all the files of a request, waiting for a place included. */
export const FETCH_DEADLINE_MS = 10_000;
export const FETCHES_PER_REQUEST = 4;
export const FETCHES_PER_PROCESS = 16;
/** All the files of one request together (encoded): two messages at their limit. */
export const REQUEST_FETCH_BYTES = 2 * MAX_MESSAGE_BYTES;

const MB = 1024 * 1024;

/** At most `size` holders at once, served in the order they came; a waiter leaves when its signal aborts. */
export class Slots {
  private held = 0;
  private readonly line: (() => void)[] = [];
  readonly size: number;
  constructor(size: number) {
    this.size = size;
  }

  /** Resolves with the slot's release once it is this caller's; rejects with the signal's reason. */
  take(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const granted = () => {
        signal.removeEventListener('abort', left);
        resolve(this.releaser());
      };
      const left = () => {
        this.line.splice(this.line.indexOf(granted), 1);
        reject(signal.reason);
      };
      this.line.push(granted);
      signal.addEventListener('abort', left, { once: true });
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.line.shift();
      // the slot passes straight to the next in line, or is given back
      if (next) next();
      else this.held--;
    };
  }
}

/** The process's places for fetching attachments, shared by every request. */
export const processSlots = new Slots(FETCHES_PER_PROCESS);

/** What a message has used of its 40 MB (encoded), counted from its own content before any fetch. */
export interface MessageTally {
  used: number;
  /** Cuts off the message's fetches (its deadline and refusal are the request's), with the reason. */
  abort: AbortController;
}

const encoded = (bytes: number) => (bytes * 4) / 3;

/**
 * One request's fetching: its deadline, its places, its byte budget. `signal` aborts with the
 * reason (a sentence) every fetch of the request when its deadline passes or it is refused whole;
 * `failure` is then the refusal of the whole request, if there is one.
 */
export class RequestFetching {
  readonly slots = new Slots(FETCHES_PER_REQUEST);
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private used = 0;
  failure: Error | null = null;

  constructor(timeoutMs: number = FETCH_DEADLINE_MS) {
    this.timer = setTimeout(() => this.controller.abort(`took longer than ${timeoutMs / 1000} s`), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A message's tally, its fetches cut off with the request's. */
  tally(used: number): MessageTally {
    const abort = new AbortController();
    const follow = () => abort.abort(this.signal.reason);
    if (this.signal.aborted) follow();
    else this.signal.addEventListener('abort', follow, { once: true });
    abort.signal.addEventListener('abort', () => this.signal.removeEventListener('abort', follow), {
      once: true,
    });
    return { used, abort };
  }

  /**
   * Counts `bytes` just received for a message: null while within both limits, else why the file
   * is refused (past the request's budget the whole request is refused at once).
   */
  count(message: MessageTally, bytes: number): string | null {
    this.used += encoded(bytes);
    message.used += encoded(bytes);
    if (this.used > REQUEST_FETCH_BYTES) {
      this.fail(
        new ValidationError(
          `The attachments given by \`path\` in this request pass the ${REQUEST_FETCH_BYTES / MB} MB one request may fetch (base64-encoded); send fewer files per request`,
        ),
      );
      return 'was cut off: the request fetches too much';
    }
    if (message.used > MAX_MESSAGE_BYTES)
      return `makes the message larger than the ${MAX_MESSAGE_BYTES / MB} MB it may be once encoded`;
    return null;
  }

  /** Refuses the whole request: every fetch still running or waiting is cut off. */
  fail(err: Error): void {
    this.failure ??= err;
    this.controller.abort(`was not fetched: ${err.message}`);
  }

  /** After the last fetch: the deadline is no longer needed. */
  end(): void {
    clearTimeout(this.timer);
  }
}
