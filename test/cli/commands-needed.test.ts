import { describe, expect, it } from 'vitest';
import { buildProgram, commandsNeeded } from '../../src/cli/main.js';

const names = (args: string[]): string[] => commandsNeeded(args).flatMap((c) => [...c.names]);
const EVERY = ['demo', 'sync', 'backfill', 'verify', 'status', 'daemon', 'worker', 'plan', 'check', 'auth', 'schema', 'migrate', 'sandbox'];

describe('the commands a run loads', () => {
  it.each([
    [
      ['sync', '--config', 'svcsync.yaml'],
      ['sync', 'backfill'],
    ],
    [
      ['backfill', '--since', '2026-01-01'],
      ['sync', 'backfill'],
    ],
    // The value of a global option is not a command, even when it is spelled like one.
    [['-c', 'sync', 'status'], ['status']],
    [['--config', 'daemon', 'migrate'], ['migrate']],
    [['--log-level', 'debug', 'plan'], ['plan']],
    [['--config=sync.yaml', 'check'], ['check']],
    [['auth', 'exchange', '--code', 'x'], ['auth']],
    [['--version'], []],
    [['-V'], []],
  ])('%j loads %j', (args, expected) => {
    expect(names(args)).toEqual(expected);
  });

  it.each([[[]], [['--help']], [['--version', '--help']], [['help', 'sync']], [['synk']], [['--config', 'x.yaml']]])(
    '%j loads every command (help, or commander naming the nearest)',
    (args) => {
      expect(names(args)).toEqual(EVERY);
    },
  );

  it('a program built for one command parses it as the whole program does', async () => {
    const cli = { exit: () => undefined };
    const [whole, one] = [await buildProgram(cli), await buildProgram(cli, ['sync', '--stream', 'books.invoices'])];
    expect(one.commands.map((c) => c.name())).toEqual(['sync', 'backfill']);
    expect(whole.commands.map((c) => c.name())).toEqual(EVERY);
    const flags = (p: typeof whole, name: string): string[] => p.commands.find((c) => c.name() === name)!.options.map((o) => o.flags);
    expect(flags(one, 'sync')).toEqual(flags(whole, 'sync'));
    expect(one.options.map((o) => o.flags)).toEqual(whole.options.map((o) => o.flags));
  });
});
