import { AuthorizationError, describeError, FatalError, QuotaExhaustedError, SvcsyncError } from '../core/errors.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import { endsTheRun } from './stop.js';

/**
 * What the failure of one queued item (a single-record read, a parent's child list) means
 * for the rest of the queue:
 * - `set-aside`: the API refused this request for good (a 404 with a code other than 1002,
 *   a 400, an answer of an unexpected shape): the item goes to the back of the queue and the
 *   pass goes on with the others, so one record that always fails cannot hold up the rest;
 * - `defer-and-end`: the pass cannot go on (the server keeps failing, a bug): the item still
 *   goes to the back, so the next run starts with the items behind it;
 * - `propagate`: not the item's doing (a stop, a lost lease, a spent quota, a refused token):
 *   the queue is left as it is.
 */
export type ItemFailureVerdict = 'set-aside' | 'defer-and-end' | 'propagate';

export function itemFailureVerdict(error: unknown, signal: AbortSignal): ItemFailureVerdict {
  if (endsTheRun(error, signal) || error instanceof LeaseLost) return 'propagate';
  if (error instanceof QuotaExhaustedError || error instanceof AuthorizationError) return 'propagate';
  if (error instanceof FatalError) return 'set-aside';
  return 'defer-and-end';
}

/** The items a pass set aside; after the pass, one error naming how many and the first. */
export class SetAside {
  private count = 0;
  private first: { itemId: string; error: unknown } | null = null;

  add(itemId: string, error: unknown): void {
    this.count++;
    this.first ??= { itemId, error };
  }

  /** Null when nothing was set aside. */
  error(what: string, stream: string): FatalError | null {
    if (this.first === null) return null;
    const { itemId, error } = this.first;
    return new FatalError(
      `${this.count} ${what} of ${stream} could not be read; the others were. The first, ${itemId}: ${describeError(error)}`,
      {
        hint: 'they stay queued, behind the others, and are tried again on the next run; ' + nextStep(error),
        ...(error instanceof SvcsyncError && error.request ? { request: error.request } : {}),
      },
    );
  }
}

function nextStep(error: unknown): string {
  if (error instanceof SvcsyncError && error.status === 404 && error.code !== undefined)
    return (
      `if the API answers 404 with code ${error.code} for a record it deleted, add ${error.code} to sync.gone_codes ` +
      'and svcsync marks such records deleted (A4).'
    );
  return error instanceof SvcsyncError && error.hint ? error.hint : 'if they keep failing, report the request above.';
}
