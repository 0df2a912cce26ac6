/** When a route is judged down, and how often it is tried again meanwhile. */
export interface HealthSettings {
  /** Failures in a row that prove the route did not take a message (no connection, greeting or login refused). */
  unhealthyAfter: number;
  /** Seconds between probes of an unhealthy route (a connection opened and closed, nothing sent). */
  probeSeconds: number;
}

export const DEFAULT_HEALTH: HealthSettings = { unhealthyAfter: 3, probeSeconds: 15 };

/** What the operator sees of a route's health. */
export interface HealthState {
  healthy: boolean;
  /** Failures in a row since the last message it took. */
  failures: number;
  /** Attempts that ended without an answer after the data (since the start): retried on this route. */
  ambiguous: number;
  /** Messages it took, and failures that proved it did not take one, since the start. */
  taken: number;
  notTaken: number;
  /** When it was last marked unhealthy or healthy again (null: healthy since the start). */
  changedAt: Date | null;
  lastError: string | null;
}

/**
 * One route's health in this process. A failure that proves the route did not take a message
 * counts; a message it takes resets the count. After `unhealthyAfter` failures in a row the route
 * is marked unhealthy: the rules send its messages to their next routes, and a probe every
 * `probeSeconds` (the transport's `probe`: connect, greet, log in, quit) brings it back. A route
 * whose transport cannot be probed is tried again after `probeSeconds`.
 */
export class RouteHealth {
  private failures = 0;
  private ambiguous = 0;
  private taken = 0;
  private notTaken = 0;
  /** Set on every change; the routes' status writer clears it when it has written the state. */
  dirty = false;
  private healthy = true;
  private changedAt: Date | null = null;
  private lastError: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  private readonly name: string;
  /** Whether the way out works again (the transport's probe), if it can be asked. */
  private readonly probeRoute: (() => Promise<void>) | undefined;
  private readonly settings: HealthSettings;
  private readonly log: { info: (line: string) => void; warn: (line: string) => void };

  constructor(
    name: string,
    probeRoute: (() => Promise<void>) | undefined,
    settings: HealthSettings,
    log: { info: (line: string) => void; warn: (line: string) => void },
  ) {
    this.name = name;
    this.probeRoute = probeRoute;
    this.settings = settings;
    this.log = log;
  }

  get isHealthy(): boolean {
    return this.healthy;
  }

  state(): HealthState {
    return {
      healthy: this.healthy,
      failures: this.failures,
      ambiguous: this.ambiguous,
      taken: this.taken,
      notTaken: this.notTaken,
      changedAt: this.changedAt,
      lastError: this.lastError,
    };
  }

  /** The route took a message. */
  succeeded(): void {
    this.taken++;
    this.dirty = true;
    this.failures = 0;
    if (!this.healthy) this.markHealthy('it took a message');
  }

  /**
   * The route answered for a message but did not accept it: a refusal by the server (`replied`),
   * which shows the route works, or an ambiguous end (a timeout or a lost connection after the
   * data: the message may have been taken), counted and retried on the same route.
   */
  answered(replied: boolean): void {
    this.dirty = true;
    if (replied) {
      this.failures = 0;
      if (!this.healthy) this.markHealthy('it answered for a message');
    } else this.ambiguous++;
  }

  /** The route did not take a message, for `reason`. */
  failed(reason: string): void {
    this.failures++;
    this.notTaken++;
    this.dirty = true;
    this.lastError = reason;
    if (this.healthy && this.failures >= this.settings.unhealthyAfter) {
      this.healthy = false;
      this.changedAt = new Date();
      this.log.warn(
        `route ${this.name} is unhealthy after ${this.failures} failures in a row (${reason}): its messages go to the next routes of their rules; probing it every ${this.settings.probeSeconds} s`,
      );
      this.scheduleProbe();
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private markHealthy(why: string): void {
    this.dirty = true;
    this.healthy = true;
    this.failures = 0;
    this.changedAt = new Date();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.log.info(`route ${this.name} is healthy again: ${why}`);
  }

  private scheduleProbe(): void {
    if (this.closed || this.healthy || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.probe();
    }, this.settings.probeSeconds * 1000);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    if (this.closed || this.healthy) return;
    if (!this.probeRoute) {
      this.markHealthy(`${this.settings.probeSeconds} s passed`);
      return;
    }
    try {
      await this.probeRoute();
      if (!this.closed && !this.healthy) this.markHealthy('a probe connected');
    } catch (err) {
      this.lastError = (err as Error).message;
      this.scheduleProbe();
    }
  }
}
