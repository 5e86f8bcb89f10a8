import type { Kysely, Transaction } from 'kysely';

/**
 * The warehouse handle without a table map. The data tables are defined by the catalog at
 * run time (src/catalog), so queries against them are built from catalog names and cannot be
 * typed; the typed view of svcsync's own `_svcsync_` tables is `stateDb` in
 * src/state/tables.ts. This is the one place `any` stands for the table map.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- catalog tables are known only at run time (typed state tables: stateDb)
type CatalogTables = any;

/** A connection (pool) to the warehouse, as `openWarehouse` returns it in `warehouse.db`. */
export type AnyKysely = Kysely<CatalogTables>;
/** A transaction on the warehouse, as `db.transaction().execute` and `warehouse.batch` hand it out. */
export type AnyTransaction = Transaction<CatalogTables>;
/** Either: what writers and the state functions accept, so they run inside or outside a transaction. */
export type AnyDb = AnyKysely | AnyTransaction;
