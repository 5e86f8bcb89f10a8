import { pino, type Logger, type DestinationStream, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import { SvcsyncError } from './errors.js';
import { SecretRegistry, REDACTED } from './secrets.js';

export type { Logger } from 'pino';

export interface LoggerSetup {
  level?: string;
  /** Pretty, human-readable output; the default when stdout is a terminal. */
  pretty?: boolean;
  /** Where JSON lines go (tests capture them here). Defaults to stderr, so stdout carries only results. */
  destination?: DestinationStream;
  fd?: 1 | 2;
  secrets: SecretRegistry;
}

// Paths pino censors by key, at the top level and one or two levels down
// (request headers, error objects, config echoes).
const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'headers.Authorization',
  'req.headers.authorization',
  'access_token',
  'refresh_token',
  'client_secret',
  'token',
  'code_value',
  '*.access_token',
  '*.refresh_token',
  '*.client_secret',
  '*.authorization',
  '*.Authorization',
  '*.token',
  '*.*.access_token',
  '*.*.refresh_token',
  '*.*.client_secret',
];

/**
 * The one logger factory. JSON lines unless pretty; every line passes through the
 * secret registry last, so a secret that slipped into a message is still removed.
 */
export function createLogger(setup: LoggerSetup): Logger {
  const level = setup.level ?? process.env['SVCSYNC_LOG_LEVEL'] ?? 'info';
  const err = errorSerializer(level === 'debug' || level === 'trace');
  const options: LoggerOptions = {
    level,
    base: { app: 'svcsync' },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err, error: err },
    hooks: { streamWrite: (line: string) => setup.secrets.scrub(line) },
  };
  if (setup.destination) return pino(options, setup.destination);
  const fd = setup.fd ?? 2;
  const pretty = setup.pretty ?? Boolean((fd === 1 ? process.stdout : process.stderr).isTTY);
  if (pretty) {
    // pino-pretty in the same thread: a transport worker would outlive short CLI runs.
    // Loaded lazily so JSON-only runs never pay for it.
    return pino(options, createPrettyStream());
  }
  // Synchronous writes: a CLI that exits right after its last line must not lose it.
  return pino(options, pino.destination({ dest: fd, sync: true }));
}

/**
 * A classified error (`SvcsyncError`) already says what happened and what to do; its stack
 * trace, and its driver cause's, only help whoever debugs svcsync, so they are logged at debug
 * level only. Anything else keeps its stack: it is a bug to report.
 */
function errorSerializer(withStacks: boolean): (e: unknown) => unknown {
  return (e: unknown) => {
    const serialized = pino.stdSerializers.err(e as Error) as unknown;
    if (withStacks || !(e instanceof SvcsyncError)) return serialized;
    const strip = (o: unknown, depth: number): void => {
      if (!o || typeof o !== 'object' || depth > 4) return;
      delete (o as { stack?: unknown }).stack;
      strip((o as { cause?: unknown }).cause, depth + 1);
    };
    strip(serialized, 0);
    return serialized;
  };
}

function createPrettyStream(): DestinationStream {
  const pretty = requirePretty();
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,app', sync: true, destination: 2 });
}

const requireFromHere = createRequire(import.meta.url);
function requirePretty(): (opts: Record<string, unknown>) => DestinationStream {
  type Factory = (opts: Record<string, unknown>) => DestinationStream;
  const mod = requireFromHere('pino-pretty') as Factory | { default: Factory };
  return typeof mod === 'function' ? mod : mod.default;
}

/** A logger that writes nowhere, for code paths that need one but have nothing to say. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Collects JSON log lines in memory; tests assert on them (and on the absence of secrets). */
export class CapturedLog implements DestinationStream {
  readonly lines: string[] = [];
  write(line: string): void {
    this.lines.push(line);
  }
  get records(): Array<Record<string, unknown>> {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
  get text(): string {
    return this.lines.join('');
  }
}
