import cliProgress from 'cli-progress';
import type { Logger } from '../core/logger.js';
import type { ProgressReporter } from '../extractors/context.js';

/**
 * On a terminal: one line per stream in flight with its pages, records and the requests
 * left today, and one per organization held back (after a takeover) with the time left.
 * Elsewhere: progress goes to the JSON log (a line per stream, pages at debug).
 */
export function createProgress(
  logger: Logger,
  interactive = Boolean(process.stderr.isTTY),
  /** Where the terminal lines go; a test hands in a stream of its own. */
  terminal: NodeJS.WritableStream = process.stderr,
): ProgressReporter & { stop(): void } {
  if (!interactive) {
    return {
      streamStarted: () => undefined,
      page: (e) =>
        logger.debug(
          {
            organization_id: e.organizationId,
            stream: e.stream,
            page: e.page,
            records: e.records,
            requests_left_today: e.requestsLeftToday,
          },
          'page committed',
        ),
      streamFinished: (e) =>
        logger.info(
          { organization_id: e.organizationId, stream: e.stream, status: e.status, records: e.records, pages: e.pages },
          'stream finished',
        ),
      stop: () => undefined,
    };
  }
  const multibar = new cliProgress.MultiBar(
    {
      stream: terminal,
      clearOnComplete: false,
      hideCursor: true,
      format: ' {name} | page {page} | {records} records, {written} written | {left} requests left today',
      barsize: 0,
    },
    cliProgress.Presets.shades_classic,
  );
  const bars = new Map<string, cliProgress.SingleBar>();
  const timers = new Set<NodeJS.Timeout>();
  const id = (e: { connection: string; organizationId: string; stream: string }): string =>
    `${e.connection}/${e.organizationId}/${e.stream}`;
  return {
    streamStarted: (e) => {
      if (bars.has(id(e))) return;
      bars.set(
        id(e),
        multibar.create(1, 0, { name: `${e.organizationId} ${e.stream}`.padEnd(44), page: 0, records: 0, written: 0, left: '?' }),
      );
    },
    page: (e) => {
      bars.get(id(e))?.update(0, { page: e.page, records: e.records, written: e.written, left: e.requestsLeftToday ?? '?' });
    },
    streamFinished: (e) => {
      const bar = bars.get(id(e));
      if (!bar) return;
      bar.update(1, { page: `${e.pages} (${e.status})`, records: e.records });
      bar.stop();
    },
    waiting: (e) => {
      // A line of its own counting down, so that a terminal never sits still without a reason.
      const name = `${e.organizationId} waiting`.padEnd(44);
      const left = (): number => Math.max(0, Math.ceil((e.until - Date.now()) / 1000));
      const bar = multibar.create(1, 0, { name, reason: e.reason, left: left() }, { format: ' {name} | {reason}: {left} s left' });
      const tick = setInterval(() => {
        if (left() > 0) return bar.update(0, { left: left() });
        clearInterval(tick);
        // Drawn at 0 before it goes: cli-progress cannot erase the line of its last bar, and a
        // stale "1 s left" would stay on the screen until another line took its place.
        bar.update(0, { left: 0 });
        multibar.update();
        multibar.remove(bar);
      }, 1000);
      tick.unref();
      timers.add(tick);
    },
    stop: () => {
      for (const t of timers) clearInterval(t);
      multibar.stop();
    },
  };
}
