import { CompiledQuery } from 'kysely';
import { describeError } from '../../core/errors.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import type { WarehouseReach } from './health.js';

/**
 * How long `/healthz` waits for the warehouse. An orchestrator's probe gives up on its own
 * (Kubernetes after `timeoutSeconds`, 1 s by default): set that above this, so the body says why.
 */
export const WAREHOUSE_PROBE_MS = 5_000;

/**
 * Whether this process reaches its warehouse: `SELECT 1`, bounded in time. The warehouse retries
 * a lost connection for `warehouse.retry_s` before it gives up, far longer than a probe waits;
 * a probe still in flight is shared, so a probe every few seconds against a warehouse that is
 * down holds one query, not one more each time.
 */
export class WarehouseProbe {
  private inFlight: Promise<WarehouseReach> | null = null;

  constructor(
    private readonly warehouse: Pick<Warehouse, 'db'>,
    private readonly timeoutMs = WAREHOUSE_PROBE_MS,
  ) {}

  probe(): Promise<WarehouseReach> {
    this.inFlight ??= this.once().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async once(): Promise<WarehouseReach> {
    // Real time, not the injected clock: the bound is the probe's, which waits in real time.
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<WarehouseReach>((resolve) => {
      timer = setTimeout(
        () => resolve({ reachable: false, error: `it did not answer SELECT 1 within ${this.timeoutMs / 1000} s` }),
        this.timeoutMs,
      );
    });
    const query = this.warehouse.db.executeQuery(CompiledQuery.raw('SELECT 1')).then(
      (): WarehouseReach => ({ reachable: true, ms: Math.round(performance.now() - started) }),
      (error: unknown): WarehouseReach => ({ reachable: false, error: describeError(error) }),
    );
    try {
      return await Promise.race([query, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
