/**
 * `svcsync sandbox mutate`: changes the data of a sandbox running in another process, through
 * its control endpoint (`POST /_sandbox/mutate`), so a user can watch an incremental sync and a
 * reconcile pick the changes up. Plain HTTP: nothing of the sandbox is imported here.
 */
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError } from '../core/errors.js';

/** Where `svcsync sandbox` listens unless told otherwise (its --host and --port defaults). */
export const DEFAULT_SANDBOX_URL = 'http://127.0.0.1:4010';

const REQUEST_TIMEOUT_MS = 30_000;

type Amount = number | string;

interface MutateOptions {
  url: string;
  modify?: Amount;
  create?: Amount;
  delete?: Amount;
  restore?: Amount;
  stream?: string[];
  family?: string[];
  org?: string;
  json?: boolean;
}

interface Counts {
  modified: number;
  created: number;
  deleted: number;
  restored: number;
}

interface Answer extends Counts {
  at: string;
  streams: Record<string, Counts>;
}

/** A number of records (`10`) or a share of each stream (`5%`), as the sandbox takes them. */
function amount(option: string) {
  return (raw: string): Amount => {
    const text = raw.trim();
    if (/^\d+$/.test(text) && Number(text) <= 1_000_000) return Number(text);
    if (/^\d+(\.\d+)?%$/.test(text) && Number(text.slice(0, -1)) <= 100) return text;
    throw new InvalidArgumentError(`${option} takes a number of records (up to 1000000) or a share from 0% to 100%, got "${raw}"`);
  };
}

function list(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((s) => s.trim())].filter((s) => s !== '');
}

function sandboxUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`--url must be the sandbox's address, such as ${DEFAULT_SANDBOX_URL}, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError(`--url must be an http:// address, got "${raw}"`);
  return url.origin;
}

export function sandboxMutateCommand(): Command {
  return new Command('mutate')
    .description(
      'Change the data of a running sandbox (`svcsync sandbox` in another terminal): modify, create, delete or restore ' +
        'records of every stream, or of those named, so that the next sync has something to pick up.',
    )
    .option('--url <url>', 'address of the sandbox, as `svcsync sandbox` printed it', sandboxUrl, DEFAULT_SANDBOX_URL)
    .option('--modify <n|p%>', 'records to modify per stream and organization: a number, or a share of the stream (5%)', amount('--modify'))
    .option('--create <n|p%>', 'records to create per stream and organization (a share is of the records it holds)', amount('--create'))
    .option('--delete <n|p%>', 'records to delete per stream and organization (a deleted parent takes its children)', amount('--delete'))
    .option(
      '--restore <n|p%>',
      'deleted top-level records to bring back per stream and organization, with their children',
      amount('--restore'),
    )
    .option(
      '--stream <names>',
      'only these streams: family.stream or stream (every family that has it); repeatable, or comma-separated',
      list,
    )
    .option(
      '--family <names>',
      'only the streams of these families (books, inventory, invoice, billing); repeatable, or comma-separated',
      list,
    )
    .option('--org <id>', 'only this organization (any of its ids); default: every organization')
    .option('--json', "print the sandbox's answer as JSON")
    .action(async (o: MutateOptions) => {
      if ([o.modify, o.create, o.delete, o.restore].every((a) => a === undefined)) {
        throw new ConfigError('svcsync sandbox mutate: nothing to change', [], {
          hint: 'give --modify, --create, --delete or --restore, for example `svcsync sandbox mutate --modify 5% --create 3% --delete 2%`',
        });
      }
      const body = {
        ...(o.modify !== undefined ? { modify: o.modify } : {}),
        ...(o.create !== undefined ? { create: o.create } : {}),
        ...(o.delete !== undefined ? { delete: o.delete } : {}),
        ...(o.restore !== undefined ? { restore: o.restore } : {}),
        ...(o.stream ? { streams: o.stream } : {}),
        ...(o.family ? { families: o.family } : {}),
        ...(o.org !== undefined ? { organization_id: o.org } : {}),
      };
      const answer = await post(o.url, body);
      process.stdout.write(o.json ? `${JSON.stringify(answer, null, 2)}\n` : renderMutation(o.url, answer));
    });
}

async function post(url: string, body: Record<string, unknown>): Promise<Answer> {
  const endpoint = `${url}/_sandbox/mutate`;
  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (e) {
    throw new ConfigError(`--url: no sandbox answers at ${url} (${transportReason(e)})`, [], {
      hint:
        `start one with \`svcsync sandbox\` (it listens on ${DEFAULT_SANDBOX_URL} by default), ` +
        'or give the address it printed with --url',
    });
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const message = (parsed as { message?: unknown } | undefined)?.message;
  if (res.status === 400 && typeof message === 'string') {
    throw new ConfigError(`the sandbox at ${url} refused the change: ${message}`, [], {
      hint: 'check --stream, --family, --org and the amounts (`svcsync sandbox mutate --help`)',
    });
  }
  if (res.status !== 200 || !isAnswer(parsed)) {
    throw new ConfigError(`--url: ${url} is not a svcsync sandbox (POST /_sandbox/mutate answered ${res.status})`, [], {
      hint: 'give the address `svcsync sandbox` printed ("sandbox listening on ...") with --url',
    });
  }
  return parsed;
}

function isAnswer(value: unknown): value is Answer {
  const v = value as Partial<Answer> | undefined;
  return typeof v?.at === 'string' && typeof v.streams === 'object' && v.streams !== null && typeof v.modified === 'number';
}

/** Why a request got no answer, in a user's words (the cause's code: ECONNREFUSED, ENOTFOUND, ...). */
function transportReason(e: unknown): string {
  if (e instanceof DOMException && (e.name === 'TimeoutError' || e.name === 'AbortError'))
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = (e as { cause?: { code?: unknown } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  if (typeof cause?.code === 'string') return cause.code;
  return e instanceof Error ? e.message : String(e);
}

const COLUMNS = ['modified', 'created', 'deleted', 'restored'] as const;

export function renderMutation(url: string, answer: Answer): string {
  const names = Object.keys(answer.streams).sort();
  const width = Math.max(6, ...names.map((n) => n.length));
  const row = (name: string, c: Counts): string => `  ${name.padEnd(width)}${COLUMNS.map((k) => String(c[k]).padStart(10)).join('')}`;
  return [
    `Changed the sandbox at ${url} (sandbox time ${answer.at}):`,
    `  ${'stream'.padEnd(width)}${COLUMNS.map((k) => k.padStart(10)).join('')}`,
    ...names.map((n) => row(n, answer.streams[n] as Counts)),
    row('total', answer),
    '`svcsync sync` picks up the modified, created and restored records; the API reports no deletions,',
    'so `svcsync sync --reconcile` is what marks the deleted ones (their rows get `_deleted_at`).',
    '',
  ].join('\n');
}
