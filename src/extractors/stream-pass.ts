import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import { loadStreamState, type StreamKey } from '../state/stream-state.js';
import type { SyncContext } from './context.js';
import { pages } from './pager.js';
import { PassWalker } from './pass-walker.js';
import { newPass, passKindFor, resumeSuffices, walkOf, type PassOptions, type Walk } from './pass-start.js';
import type { StreamTally } from './stream-tally.js';

export type { PassOptions, SyncMode } from './pass-start.js';
export { detailIsEnabled } from './page-records.js';

/**
 * Runs (or resumes) one pass over a top-level stream of one organization. Each page's rows,
 * the work it creates for child streams and single-record completion, and the pass's
 * position are committed in one transaction; the cursor moves only when the pass ends.
 */
export async function runStreamPass(
  ctx: SyncContext,
  organizationId: string,
  stream: StreamSpec,
  options: PassOptions,
  tally: StreamTally,
): Promise<void> {
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(stream) };
  const want = passKindFor(stream, options.mode);
  let state = await loadStreamState(ctx.warehouse.db, key);
  if (state.pass) {
    const resumed = state.pass;
    await walk(ctx, walkOf(key, stream, state, options), tally);
    if (resumeSuffices(resumed, want, options)) return;
    // The resumed pass moved the cursor.
    state = await loadStreamState(ctx.warehouse.db, key);
  }
  const pass = await newPass(ctx, stream, state, want, options, organizationId);
  await walk(ctx, walkOf(key, stream, state, options, pass), tally);
}

/**
 * One pass, page by page: fetch (pager), then the page's work (normalize, observe the window,
 * compare with what is stored, plan) committed in one transaction, until the last page.
 */
async function walk(ctx: SyncContext, pass: Walk, tally: StreamTally): Promise<void> {
  const walker = await PassWalker.open(ctx, pass, tally);
  for await (const page of pages(walker.request)) {
    const work = await walker.work(page);
    await walker.commit(work);
    if (work.end) break;
  }
  // After the last commit: the rows are in whatever this costs, and the next pass's lookups are planned on them.
  await walker.finish();
}
