import { CompiledQuery } from 'kysely';
import { ConfigError, FatalError, describeError } from '../core/errors.js';
import type { Warehouse } from './warehouse.js';

/**
 * The read-only role for BI tools (`svcsync migrate --create-readonly-role NAME`, Postgres only;
 * docs/bi.md). The role is NOLOGIN: people and tools log in as users made members of it, so no
 * password ever passes through svcsync's command line.
 */

/** Lower-case, unquoted-identifier style, at most 63 bytes (Postgres's NAMEDATALEN - 1). */
export const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Roles Postgres reserves (`pg_*`) or that mean something else in a GRANT. */
const RESERVED = new Set(['public', 'none', 'current_user', 'session_user', 'current_role', 'user']);

/** The name as given, or a ConfigError naming the flag. */
export function validateRoleName(name: string): string {
  if (!ROLE_NAME.test(name)) {
    throw new ConfigError(`--create-readonly-role ${JSON.stringify(name)} is not a valid role name`, [], {
      hint: 'Use 1 to 63 lower-case letters, digits and underscores, starting with a letter or underscore (e.g. warehouse_reader).',
    });
  }
  if (RESERVED.has(name) || name.startsWith('pg_')) {
    throw new ConfigError(`--create-readonly-role ${JSON.stringify(name)} is a name Postgres reserves`, [], {
      hint: 'Choose another name, e.g. warehouse_reader.',
    });
  }
  return name;
}

/** A Postgres identifier in double quotes (any text: schema and owner names come from the server). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export interface ReadonlyRolePlan {
  /** The role to create or update (already validated). */
  role: string;
  /** The warehouse's schema: current_schema() of svcsync's connection. */
  schema: string;
  /** The schema of the views (`warehouse.views_schema`), when they have one of their own. */
  viewsSchema?: string;
  /** The user svcsync connects as, which runs the migrations and so owns the tables they create. */
  owner: string;
  /** Whether the role exists already: then only the grants are applied again. */
  exists: boolean;
}

/**
 * The statements, in order. Grants are idempotent in Postgres, so running them again on an
 * existing role only adds what later migrations created. SELECT on all tables covers views.
 * Default privileges are per creating role: they make the tables and views that `owner`
 * creates later in the schema (new migrations) readable too.
 */
export function readonlyRoleStatements(plan: ReadonlyRolePlan): string[] {
  const role = quoteIdent(validateRoleName(plan.role));
  // The views' schema too, when they have one: a BI tool shown only it reads the views alone.
  const schemas = [...new Set([plan.schema, plan.viewsSchema ?? plan.schema])].map(quoteIdent);
  return [
    ...(plan.exists ? [] : [`CREATE ROLE ${role} NOLOGIN`]),
    ...schemas.flatMap((schema) => [
      `GRANT USAGE ON SCHEMA ${schema} TO ${role}`,
      `GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${quoteIdent(plan.owner)} IN SCHEMA ${schema} GRANT SELECT ON TABLES TO ${role}`,
    ]),
  ];
}

/** What to tell the user afterwards: how a tool's login gets the role's rights. */
export function readonlyRoleHint(role: string, schemas?: { schema: string; viewsSchema?: string }): string {
  const path = schemas?.viewsSchema === undefined ? undefined : `${schemas.viewsSchema}, ${schemas.schema}`;
  return (
    `Create a login for each tool as a member of it, in psql (choose the password there, not on svcsync's command line):\n` +
    `  CREATE USER metabase LOGIN PASSWORD '...' IN ROLE ${role};\n` +
    (path === undefined
      ? ''
      : `  ALTER ROLE metabase SET search_path = ${path};   -- the views first, then the tables, for unqualified names\n`) +
    `Run svcsync migrate --create-readonly-role ${role} again at any time: it re-applies the grants.`
  );
}

export interface ReadonlyRoleResult {
  role: string;
  schema: string;
  /** The views' schema when they have one of their own. */
  viewsSchema?: string;
  created: boolean;
  statements: string[];
}

/** Creates the role (or re-applies its grants) on a Postgres warehouse, in one transaction. */
export async function createReadonlyRole(warehouse: Warehouse, name: string): Promise<ReadonlyRoleResult> {
  const role = validateRoleName(name);
  if (warehouse.dialect !== 'postgres') throw sqliteHasNoRoles(warehouse.displayUrl);
  return warehouse.db.transaction().execute(async (trx) => {
    const who = await trx.executeQuery<{ schema: string | null; owner: string }>(
      CompiledQuery.raw('SELECT current_schema() AS schema, current_user AS owner'),
    );
    const { schema, owner } = who.rows[0]!;
    if (!schema) {
      throw new ConfigError(`${warehouse.displayUrl} has no current schema (no schema of its search_path exists)`, [], {
        hint: 'Run svcsync migrate first, or fix the search_path in the warehouse URL.',
      });
    }
    const found = await trx.executeQuery(CompiledQuery.raw('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]));
    const views = warehouse.schemas?.views;
    const viewsSchema = views !== undefined && views !== schema ? views : undefined;
    const statements = readonlyRoleStatements({
      role,
      schema,
      owner,
      exists: found.rows.length > 0,
      ...(viewsSchema !== undefined ? { viewsSchema } : {}),
    });
    for (const statement of statements) {
      try {
        await trx.executeQuery(CompiledQuery.raw(statement));
      } catch (error) {
        throw new FatalError(`Could not set up the read-only role ${role}: ${describeError(error)} (in: ${statement})`, {
          hint: `The user in warehouse: needs CREATEROLE (or run the statements in docs/bi.md as an administrator).`,
          cause: error,
        });
      }
    }
    return { role, schema, ...(viewsSchema !== undefined ? { viewsSchema } : {}), created: found.rows.length === 0, statements };
  });
}

/** The error for `--create-readonly-role` on SQLite. */
export function sqliteHasNoRoles(displayUrl: string): ConfigError {
  const file = displayUrl.replace(/^sqlite:/, '');
  return new ConfigError(`--create-readonly-role needs a Postgres warehouse; ${displayUrl} is SQLite, which has no roles or grants`, [], {
    hint:
      `Give BI tools the file read-only instead: open it as file:${file}?mode=ro (a SQLite URI), ` +
      `with sqlite3 -readonly ${file}, or make the file read-only for their user.`,
  });
}
