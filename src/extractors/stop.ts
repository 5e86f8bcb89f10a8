/**
 * A request to stop a run between units of work (dlt's `raise_if_signalled`). The extractors
 * ask it before they send a request for another page or another completion item; a page
 * already asked for is still received and committed. The caller (the daemon on a first
 * SIGTERM, or when a job reaches its share of the day's budget) only has to ask and then wait
 * for runSync to return. The run's AbortSignal stays the hard stop that abandons a page in
 * flight.
 */
export interface StopRequest {
  /** Why the run should stop, or null while it may go on. Cheap: asked before every request. */
  reason(): string | null;
}

export const neverStop: StopRequest = { reason: () => null };

/** A stop request as a flag the caller sets (tests, the CLI). */
export class StopFlag implements StopRequest {
  private why: string | null = null;
  request(why: string): void {
    this.why ??= why;
  }
  reason(): string | null {
    return this.why;
  }
}

/**
 * Thrown where a stop request is honoured. It is not a failure: every layer lets it through
 * untouched (no stream or organization is marked failed), and runSync records the run as
 * stopped before passing it on.
 */
export class StopRequested extends Error {
  constructor(readonly reason: string) {
    super(`stopped between pages: ${reason}`);
    this.name = 'StopRequested';
  }
}

/** Throws when the run was aborted or asked to stop; called before each new unit of work. */
export function raiseIfStopped(run: { stop: StopRequest; signal: AbortSignal }): void {
  run.signal.throwIfAborted();
  const why = run.stop.reason();
  if (why !== null) throw new StopRequested(why);
}

/** True for the errors that end a run rather than one stream or organization: they propagate as they are. */
export function endsTheRun(error: unknown, signal: AbortSignal): boolean {
  return error instanceof StopRequested || signal.aborted;
}
