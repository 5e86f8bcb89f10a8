import { Command, CommanderError } from 'commander';
import { ExitCode, SvcsyncError, exitCodeFor } from '../core/errors.js';
import { svcsyncVersion } from '../core/version.js';
import { authCommand } from './commands/auth.js';
import { checkCommand } from './commands/check.js';
import { daemonCommand } from './commands/daemon.js';
import { demoCommand } from './commands/demo.js';
import { migrateCommand, schemaCommand } from './commands/schema.js';
import { planCommand } from './commands/plan.js';
import { statusCommand } from './commands/status.js';
import { syncCommands } from './commands/sync.js';
import { verifyCommand } from './commands/verify.js';
import { workerCommand } from './commands/worker.js';
import type { Cli, GlobalOptions } from './runtime.js';
import { sandboxCommand } from './sandbox-command.js';

export function buildProgram(cli: { exit: (code: number) => void }): Command {
  const program = new Command('svcsync')
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
  const shared: Cli = { global: () => program.opts<GlobalOptions>(), exit: cli.exit };
  program.addCommand(demoCommand(shared));
  for (const c of syncCommands(shared)) program.addCommand(c);
  program.addCommand(verifyCommand(shared));
  program.addCommand(statusCommand(shared));
  program.addCommand(daemonCommand(shared));
  program.addCommand(workerCommand(shared));
  program.addCommand(planCommand(shared));
  program.addCommand(checkCommand(shared));
  program.addCommand(authCommand(shared));
  program.addCommand(schemaCommand(shared));
  program.addCommand(migrateCommand(shared));
  program.addCommand(sandboxCommand());
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
  const program = buildProgram({ exit: (c) => void (code = c) });
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
