import { dirname } from 'node:path';
import { CONFIG_WAREHOUSE_FAULTS, WarehouseError, type WarehouseFault } from '../core/errors.js';

/**
 * The one place that decides what a database driver's failure means, as `classify` does for
 * the API (src/api/classify.ts). better-sqlite3, pg and the file system each report the same
 * fault in their own words; everything above the warehouse's driver sees one `WarehouseError`
 * with a fault, a message that names the warehouse, and a hint that says what to do.
 */

/**
 * A postgres URL as messages show it: host, port and database, the password masked, and no
 * query string (it may carry `password=` or `sslpassword=`, and its options are noise).
 */
export function displayWarehouseUrl(url: string): string {
  return url.replace(/(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/, '$1:***@').replace(/\?.*$/, '');
}

/** Which warehouse a message is about. */
export interface WarehouseTarget {
  dialect: 'sqlite' | 'postgres';
  /** `sqlite:/abs/path` or the Postgres URL without its password. */
  displayUrl: string;
}

interface DriverError {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  cause?: unknown;
  syscall?: unknown;
  path?: unknown;
}

const asDriverError = (e: unknown): DriverError => (e && typeof e === 'object' ? e : {});

function textOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The table a statement touches, for messages ("statement timeout on table x"). */
export function tableOfStatement(sql: string | undefined): string | undefined {
  if (!sql) return undefined;
  const m =
    /\b(?:insert\s+into|update|delete\s+from|from|table(?:\s+if\s+(?:not\s+)?exists)?|into|on)\s+(?:"?[A-Za-z_][\w]*"?\.)?"?([A-Za-z_][\w]*)"?/i.exec(
      sql,
    );
  return m?.[1];
}

/** The SQLite file a `sqlite:` display URL names. */
function sqliteFile(target: WarehouseTarget): string {
  return target.displayUrl.replace(/^sqlite:/, '');
}

/** Postgres SQLSTATE classes and codes svcsync tells apart (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
function postgresFault(code: string, message: string): WarehouseFault | null {
  if (code === '53100') return 'disk_full';
  if (code === '25006') return 'read_only';
  if (code === '42501' || code === '28000' || code === '28P01') return 'permission';
  if (code === '3D000') return 'unknown_database';
  if (code === '55P03') return 'lock_timeout';
  if (code === '57014') return /statement timeout/i.test(message) ? 'statement_timeout' : 'connection_lost';
  if (code === '57P01') return /shut ?down/i.test(message) ? 'shutting_down' : 'connection_lost';
  if (code === '57P02' || code === '57P03') return 'shutting_down';
  if (code === '53300') return 'too_many_connections';
  if (code === '40001' || code === '40P01') return 'conflict';
  if (code.startsWith('08')) return 'connection_lost';
  return null;
}

function sqliteFault(code: string): WarehouseFault | null {
  if (code === 'SQLITE_FULL') return 'disk_full';
  if (code.startsWith('SQLITE_READONLY')) return 'read_only';
  if (code === 'SQLITE_PERM' || code === 'SQLITE_AUTH') return 'permission';
  if (code.startsWith('SQLITE_CANTOPEN')) return 'missing_folder';
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) return 'not_a_database';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'locked';
  if (code === 'SQLITE_IOERR_WRITE' || code === 'SQLITE_IOERR_FSYNC') return 'disk_full';
  return null;
}

/** File-system and socket error codes (`errno` names), as Node reports them. */
function systemFault(code: string): WarehouseFault | null {
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG') return 'disk_full';
  if (code === 'EROFS') return 'read_only';
  if (code === 'EACCES' || code === 'EPERM') return 'permission';
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG') return 'missing_folder';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unreachable';
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED'].includes(code))
    return 'connection_lost';
  return null;
}

/** pg reports a dead or closed socket in words only. */
function messageFault(message: string): WarehouseFault | null {
  if (/database or disk is full|no space left/i.test(message)) return 'disk_full';
  if (/attempt to write a readonly database|read-only file system/i.test(message)) return 'read_only';
  if (/database is locked/i.test(message)) return 'locked';
  if (/directory does not exist|unable to open database file/i.test(message)) return 'missing_folder';
  if (/the database system is (starting up|shutting down|in recovery mode)/i.test(message)) return 'shutting_down';
  if (
    /connection terminated|terminating connection|not queryable|connection error|client was closed|connection ended|timeout exceeded when trying to connect|timeout expired|server closed the connection/i.test(
      message,
    )
  )
    return 'connection_lost';
  return null;
}

function codeFault(code: string, message: string): WarehouseFault | null {
  if (code.startsWith('SQLITE_')) return sqliteFault(code);
  // Node's errno names first: some (EPERM, EROFS, EPIPE) have a SQLSTATE's length.
  const system = systemFault(code);
  if (system) return system;
  return /^[0-9A-Z]{5}$/.test(code) ? postgresFault(code, message) : null;
}

/** Which fault a driver error is; `other` when svcsync cannot tell. */
export function faultOf(error: unknown): WarehouseFault {
  const e = asDriverError(error);
  const message = textOf(error);
  const code = typeof e.code === 'string' ? e.code : '';
  const byCode = codeFault(code, message);
  if (byCode) return byCode;
  const cause = e.cause;
  if (cause && cause !== error) {
    const inner = faultOf(cause);
    if (inner !== 'other') return inner;
  }
  return messageFault(message) ?? 'other';
}

/** What an explanation reads of the warehouse and the statement that failed. */
interface Scene {
  sqlite: boolean;
  /** The file a `sqlite:` display URL names (for Postgres, the display URL as it is). */
  file: string;
  /** The warehouse as a message's subject: "the SQLite warehouse /x.db". */
  where: string;
  /** The statement's table, when known. */
  table: string | undefined;
  /** " (table x)", or nothing. */
  onTable: string;
}

interface Explanation {
  what: string;
  hint: string;
}

/** Each fault in the warehouse's words, and what to do about it. */
const EXPLANATIONS: Record<WarehouseFault, (s: Scene) => Explanation> = {
  disk_full: ({ sqlite, file, where, onTable }) => ({
    what: `${where} is out of space${onTable}`,
    hint: sqlite
      ? `free space on the disk that holds ${dirname(file)} (SQLite also writes ${file}-wal beside it)`
      : "free space on the Postgres server's data disk (or raise its quota)",
  }),
  read_only: ({ sqlite, file, where, onTable }) => ({
    what: `${where} is read-only${onTable}`,
    hint: sqlite
      ? `make ${file} and its folder ${dirname(file)} writable by this user (SQLite writes ${file}-wal and ${file}-shm beside it), ` +
        'or point `warehouse:` at a writable path.'
      : 'the server accepts no writes (a standby, or default_transaction_read_only): point `warehouse:` at the primary server.',
  }),
  permission: ({ sqlite, file, where, onTable }) => ({
    what: `${where} refused access${onTable}`,
    hint: sqlite
      ? `give this user read and write permission on ${file} and its folder ${dirname(file)}, or point \`warehouse:\` at another path.`
      : "check the user and password in `warehouse:` and grant that user CREATE and write on the warehouse's schema " +
        '(svcsync creates and alters its own tables).',
  }),
  missing_folder: ({ file, where }) => ({
    what: `${where} cannot be opened or created`,
    hint: `check \`warehouse:\`: ${dirname(file)} must be a folder this user can create or write (no part of the path may be a file).`,
  }),
  not_a_database: ({ file }) => ({
    what: `${file} is not a SQLite database, or it is damaged`,
    hint: '`warehouse:` must name a SQLite file svcsync created (or a new path); restore a damaged file from a backup.',
  }),
  unknown_database: ({ where }) => ({
    what: `${where}: the database does not exist`,
    hint: 'create it (`createdb NAME`) or fix the database name at the end of the `warehouse:` URL.',
  }),
  unreachable: ({ where }) => ({
    what: `${where}: the host name does not resolve`,
    hint: "check the host in the `warehouse:` URL and this machine's DNS.",
  }),
  locked: ({ sqlite, file, where, onTable }) => ({
    what: sqlite
      ? `${where} is locked: another program holds a write lock on it${onTable}`
      : `${where}: a lock could not be taken${onTable}`,
    hint: sqlite
      ? `close the program that writes to ${file} (a database browser with unsaved changes, another tool's open transaction); ` +
        'svcsync waited `warehouse.busy_timeout_s` per statement and retried for `warehouse.retry_s`'
      : 'another session holds a lock svcsync needs; svcsync retried for `warehouse.retry_s`. Find it in pg_stat_activity.',
  }),
  lock_timeout: ({ where, table, onTable }) => ({
    what: `${where}: waiting for a lock took longer than lock_timeout${onTable}`,
    hint:
      `another session holds a lock${table ? ` on ${table}` : ''} (find it in pg_locks and pg_stat_activity); ` +
      "svcsync retried for `warehouse.retry_s`. Raise lock_timeout for svcsync's user if such locks are expected.",
  }),
  statement_timeout: ({ where, table }) => ({
    what: `${where}: a statement${table ? ` on table ${table}` : ''} ran longer than statement_timeout`,
    hint:
      "the statement waited or ran past the server's statement_timeout" +
      `${table ? ` (often a lock another session holds on ${table})` : ''}; ` +
      "svcsync retried for `warehouse.retry_s`. Raise statement_timeout for svcsync's user " +
      '(ALTER ROLE ... SET statement_timeout) or find the blocking session in pg_stat_activity.',
  }),
  connection_lost: ({ where, onTable }) => ({
    what: `${where}: the connection was lost${onTable}`,
    hint:
      'the server ended the session (a restart, a failover, an administrator, a network fault); svcsync retried on new ' +
      'connections for `warehouse.retry_s`. Check that the server is up',
  }),
  shutting_down: ({ where }) => ({
    what: `${where} is shutting down or starting up`,
    hint:
      'the server is restarting; svcsync retried for `warehouse.retry_s` (raise it to ride out longer restarts). ' + 'Wait until it is up',
  }),
  too_many_connections: ({ where }) => ({
    what: `${where} refused a new connection: too many connections`,
    hint: "lower the number of svcsync processes or raise the server's max_connections; svcsync retried for `warehouse.retry_s`.",
  }),
  conflict: ({ where, onTable }) => ({
    what: `${where}: a transaction conflicted with another session's${onTable}`,
    hint: 'svcsync retried for `warehouse.retry_s`; if it persists, another program is writing to the same rows.',
  }),
  other: ({ where, onTable }) => ({
    what: `${where} failed${onTable}`,
    hint: 'svcsync did not expect this from the warehouse; run with --log-level debug and report the message if it persists',
  }),
};

/** What the fault means, in the warehouse's words, and what to do about it. */
function explain(fault: WarehouseFault, target: WarehouseTarget, table: string | undefined): Explanation {
  const sqlite = target.dialect === 'sqlite';
  const file = sqliteFile(target);
  const where = sqlite ? `the SQLite warehouse ${file}` : `the Postgres warehouse ${target.displayUrl}`;
  return EXPLANATIONS[fault]({ sqlite, file, where, table, onTable: table ? ` (table ${table})` : '' });
}

/** The server a Postgres warehouse connects to, as the driver resolved it (URL, else PGHOST/PGPORT, else its defaults). */
export interface PostgresServer {
  host: string;
  port: number;
}

/**
 * A failure to open the first connection, before any work. A server that refuses or never
 * answers at start (a wrong host or port, a server that is down) is a setting to check, not a
 * lost connection to wait out: it is `unreachable` (exit 2), naming host and port. Every other
 * failure is classified as anywhere else (a server starting up is still waited out).
 */
export function classifyOpeningError(error: unknown, target: WarehouseTarget, server: PostgresServer): WarehouseError {
  if (error instanceof WarehouseError || faultOf(error) !== 'connection_lost') return classifyWarehouseError(error, target);
  const said = textOf(error).split('\n')[0]!.slice(0, 300);
  const at = server.host.startsWith('/') ? `the socket in ${server.host} (port ${server.port})` : `${server.host}:${server.port}`;
  return new WarehouseError(`cannot connect to the Postgres warehouse at ${at} (${target.displayUrl}): ${said}`, {
    fault: 'unreachable',
    warehouse: target.displayUrl,
    hint:
      'check the host and port in `warehouse:` (or SVCSYNC_WAREHOUSE), that the Postgres server is running, and that it ' +
      'accepts connections from this machine there (listen_addresses, port and pg_hba.conf; a firewall). Nothing was read or written.',
    cause: error,
  });
}

/**
 * A driver's failure as a `WarehouseError` (a `WarehouseError` is returned as it is). `sql` is
 * the statement that failed, when there was one, to name its table.
 */
export function classifyWarehouseError(error: unknown, target: WarehouseTarget, sql?: string): WarehouseError {
  if (error instanceof WarehouseError) return error;
  const fault = faultOf(error);
  const { what, hint } = explain(fault, target, tableOfStatement(sql));
  const then = CONFIG_WAREHOUSE_FAULTS.has(fault)
    ? ''
    : ', then run the same command again: every committed page is kept and it continues from there.';
  // The driver's words, once, for whoever must search for them; a URL in them loses its password.
  const said = textOf(error)
    .replace(/(postgres(?:ql)?:\/\/[^:/@\s]+):[^@\s]*@/g, '$1:***@')
    .split('\n')[0]!
    .slice(0, 300);
  return new WarehouseError(`${what}: ${said}`, {
    fault,
    warehouse: target.displayUrl,
    hint: `${hint.replace(/\.$/, '')}${then || '.'}`,
    cause: error,
  });
}
