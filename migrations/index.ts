import type { Migration } from 'kysely';
import * as stateTables from './20261122T050000-state-tables.js';
import * as warehouseTables from './20261122T060000-warehouse-tables.js';
import * as runStreamWarnings from './20261122T173000-run-stream-warnings.js';
import * as verifyTable from './20261122T180000-verify-table.js';
import * as relationshipsAndDictionary from './20261122T190000-relationships-and-dictionary.js';
import * as driftTable from './20261122T191000-drift-table.js';
import * as views from './20261122T192000-views.js';
import * as rowLineage from './20261122T193000-row-lineage.js';
import * as viewsRowLineage from './20261122T194000-views-row-lineage.js';
import * as dictionaryRowLineage from './20261122T194500-dictionary-row-lineage.js';
import * as orgLeases from './20261122T200000-org-leases.js';
import * as leaseWindow from './20261122T202000-lease-window.js';
import * as runProcess from './20261122T210000-run-process.js';
import * as viewsExchangeRate from './20261123T020000-views-exchange-rate.js';
import * as runAbandoned from './20261125T120000-run-abandoned.js';
import * as derivedObjects from './20261126T090000-derived-objects.js';
import * as connectionAuth from './20261126T120000-connection-auth.js';
import * as dictionaryViews from './20261127T090000-dictionary-views.js';
import * as usageResetsAt from './20261127T100000-usage-resets-at.js';
import * as runStreamCounts from './20261128T100000-run-stream-counts.js';
import * as historyRecord from './20261128T140000-history-record.js';
import * as childrenReread from './20261128T160000-children-reread.js';
import * as pendingRecency from './20261129T100000-pending-recency.js';
import * as listedIds from './20261130T090000-listed-ids.js';
import * as pageMemo from './20261201T090000-page-memo.js';
import * as appliedUnits from './20261204T090000-applied-units.js';
import * as runStreamDeleted from './20261204T091000-run-stream-deleted.js';
import * as shortcutVerdicts from './20261204T092000-shortcut-verdicts.js';

/**
 * Every migration, by name. Listed statically (rather than read from the folder) so the
 * same list works from TypeScript under the tests and from the compiled dist/.
 */
export const MIGRATIONS: Record<string, Migration> = {
  '20261122T050000-state-tables': stateTables,
  '20261122T060000-warehouse-tables': warehouseTables,
  '20261122T173000-run-stream-warnings': runStreamWarnings,
  '20261122T180000-verify-table': verifyTable,
  '20261122T190000-relationships-and-dictionary': relationshipsAndDictionary,
  '20261122T191000-drift-table': driftTable,
  '20261122T192000-views': views,
  '20261122T193000-row-lineage': rowLineage,
  '20261122T194000-views-row-lineage': viewsRowLineage,
  '20261122T194500-dictionary-row-lineage': dictionaryRowLineage,
  '20261122T200000-org-leases': orgLeases,
  '20261122T202000-lease-window': leaseWindow,
  '20261122T210000-run-process': runProcess,
  '20261123T020000-views-exchange-rate': viewsExchangeRate,
  '20261125T120000-run-abandoned': runAbandoned,
  '20261126T090000-derived-objects': derivedObjects,
  '20261126T120000-connection-auth': connectionAuth,
  '20261127T090000-dictionary-views': dictionaryViews,
  '20261127T100000-usage-resets-at': usageResetsAt,
  '20261128T100000-run-stream-counts': runStreamCounts,
  '20261128T140000-history-record': historyRecord,
  '20261128T160000-children-reread': childrenReread,
  '20261129T100000-pending-recency': pendingRecency,
  '20261130T090000-listed-ids': listedIds,
  '20261201T090000-page-memo': pageMemo,
  '20261204T090000-applied-units': appliedUnits,
  '20261204T091000-run-stream-deleted': runStreamDeleted,
  '20261204T092000-shortcut-verdicts': shortcutVerdicts,
};
