import type { Warehouse } from '../../src/loaders/warehouse.js';
import { stateDb } from '../../src/state/tables.js';

/** Records an organization as discovery would (`_svcsync_organizations`), so a job runner resolves its jobs. */
export async function knownOrganization(
  warehouse: Warehouse,
  org: { connection: string; family: string; organizationId: string; at: number },
): Promise<void> {
  await stateDb(warehouse.db)
    .insertInto('_svcsync_organizations')
    .values({
      connection: org.connection,
      family: org.family,
      organization_id: org.organizationId,
      name: 'One',
      is_active: 1,
      time_zone: 'UTC',
      discovered_at: new Date(org.at).toISOString(),
    })
    .execute();
}
