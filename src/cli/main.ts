import { Command, CommanderError } from 'commander';
import { ExitCode, SvcsyncError, exitCodeFor } from '../core/errors.js';
import { svcsyncVersion } from '../core/version.js';
import type { Cli, GlobalOptions } from './runtime.js';

/**
 * The commands in the order `--help` lists them, each with the module that builds it. A module is
 * imported only when its command runs (or when every command is needed: `--help`, a usage error):
 * the other commands' modules are about a fifth of the 875 files a start of every command reads,
 * and Node's module loader spends about a millisecond of CPU a file (docs/benchmarks.md).
 */
const COMMANDS: ReadonlyArray<{ names: readonly string[]; load(cli: Cli): Promise<Command[]> }> = [
  { names: ['demo'], load: async (cli) => [(await import('./commands/demo.js')).demoCommand(cli)] },
  { names: ['sync', 'backfill'], load: async (cli) => (await import('./commands/sync.js')).syncCommands(cli) },
  { names: ['verify'], load: async (cli) => [(await import('./commands/verify.js')).verifyCommand(cli)] },
  { names: ['status'], load: async (cli) => [(await import('./commands/status.js')).statusCommand(cli)] },
  { names: ['daemon'], load: async (cli) => [(await import('./commands/daemon.js')).daemonCommand(cli)] },
  { names: ['worker'], load: async (cli) => [(await import('./commands/worker.js')).workerCommand(cli)] },
  { names: ['plan'], load: async (cli) => [(await import('./commands/plan.js')).planCommand(cli)] },
  { names: ['check'], load: async (cli) => [(await import('./commands/check.js')).checkCommand(cli)] },
  { names: ['auth'], load: async (cli) => [(await import('./commands/auth.js')).authCommand(cli)] },
  { names: ['schema'], load: async (cli) => [(await import('./commands/schema.js')).schemaCommand(cli)] },
  { names: ['migrate'], load: async (cli) => [(await import('./commands/schema.js')).migrateCommand(cli)] },
  { names: ['sandbox'], load: async () => [(await import('./sandbox-command.js')).sandboxCommand()] },
];

/** The program's own options, before any command is added. */
function globalProgram(): Command {
  return new Command('svcsync')
    .description('Keep a SQLite or Postgres warehouse current with the books, inventory, invoice and billing API families.')
    .option(
      '-c, --config <path>',
      'configuration file (YAML or JSON); default: $SVCSYNC_CONFIG, else the first of ./svcsync.yaml, ' +
        '$XDG_CONFIG_HOME/svcsync/svcsync.yaml (~/.config), /etc/svcsync/svcsync.yaml',
    )
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (default: info; warn on a terminal)')
    .version(svcsyncVersion(), '-V, --version', "print svcsync's version and exit")
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
}

/** The flags of the program's options that take a value: the word after one is its value, not a command. */
function valueFlags(program: Command): Set<string> {
  return new Set(
    program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined)),
  );
}

/**
 * The commands a run needs, from its arguments (after node and the script): the one named by the
 * first word that is not an option; none for `--version` alone; every one otherwise (`--help`,
 * `help`, no command, a misspelled one, which commander answers with the nearest names).
 */
export function commandsNeeded(
  args: readonly string[],
  takesValue: ReadonlySet<string> = valueFlags(globalProgram()),
): Array<(typeof COMMANDS)[number]> {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (takesValue.has(word)) i++;
    else if (!word.startsWith('-')) {
      const named = COMMANDS.filter((c) => c.names.includes(word));
      return named.length > 0 ? named : [...COMMANDS];
    }
  }
  const version = args.some((a) => a === '-V' || a === '--version');
  const help = args.some((a) => a === '-h' || a === '--help');
  return version && !help ? [] : [...COMMANDS];
}

/**
 * The program with the commands the arguments need (every command without arguments): what it
 * parses and prints for those arguments is what the whole program would.
 */
export async function buildProgram(cli: { exit: (code: number) => void }, args?: readonly string[]): Promise<Command> {
  const program = globalProgram();
  const shared: Cli = { global: () => program.opts<GlobalOptions>(), exit: cli.exit };
  for (const entry of args === undefined ? COMMANDS : commandsNeeded(args, valueFlags(program))) {
    for (const c of await entry.load(shared)) program.addCommand(c);
  }
  // Nested commands too (auth exchange, auth scopes): a usage error is exit 2 everywhere.
  const override = (c: Command): void => {
    c.exitOverride();
    c.commands.forEach(override);
  };
  program.commands.forEach(override);
  return program;
}

/** Runs the command line and returns the exit code (documented in the README). */
export async function main(argv: string[]): Promise<number> {
  let code: number = ExitCode.ok;
  const program = await buildProgram({ exit: (c) => void (code = c) }, argv.slice(2));
  try {
    await program.parseAsync(argv);
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here with code 0; usage errors are configuration errors.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.config;
    }
    if (error instanceof SvcsyncError) {
      process.stderr.write(`svcsync: ${error.describe()}\n`);
      return exitCodeFor(error);
    }
    // A stack trace helps whoever debugs svcsync, not whoever runs it: shown only when asked for.
    const level = program.opts<GlobalOptions>().logLevel ?? process.env['SVCSYNC_LOG_LEVEL'];
    const verbose = level === 'debug' || level === 'trace';
    let text = String(error);
    if (error instanceof Error) text = verbose ? (error.stack ?? error.message) : error.message;
    process.stderr.write(
      `svcsync: unexpected failure: ${text}\n` +
        (verbose ? '' : '  → run again with --log-level debug for the details, and report them if it persists.\n'),
    );
    return ExitCode.unexpected;
  }
}
