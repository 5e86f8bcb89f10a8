import type { Command, Option } from 'commander';
import { CATALOG } from '../../src/catalog/index.js';
import { qualifiedName } from '../../src/catalog/types.js';
import { buildProgram } from '../../src/cli/main.js';

/** Every stream of the catalog, as family.stream. */
export const STREAMS = new Set(CATALOG.map((s) => qualifiedName(s)));

/** Splits a shell line into words, honouring quotes; stops at a comment, pipe, redirection or `&&`/`;`. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let started = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      word += line.slice(i + 1, end < 0 ? undefined : end);
      started = true;
      i = end < 0 ? line.length : end;
    } else if (/\s/.test(c)) {
      if (started) words.push(word);
      word = '';
      started = false;
    } else if ((c === '#' && !started) || c === '|' || c === ';' || c === '>' || c === '<' || (c === '&' && line[i + 1] === '&')) {
      break;
    } else if (c === '2' && !started && line[i + 1] === '>') {
      break;
    } else {
      word += c;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}

/** `[--flag value]` and `NAME[=VALUE]` written out, so that their parts are checked like the rest. */
export function optionalParts(text: string): string {
  return text.replace(/(\S)\[([^\]\s]*)\]/g, '$1$2').replace(/[[\]]/g, ' ');
}

/** The line up to an unquoted `#` that starts a word (a shell comment). */
export function withoutComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i);
  }
  return line;
}

/** The whole program, every command loaded; only read here. */
const PROGRAM = await buildProgram({ exit: () => undefined });

const GLOBAL_OPTIONS = PROGRAM.options.flatMap((o) => [o.long, o.short]);

/**
 * Whether the words after a `svcsync` are its arguments: a subcommand-like word or a global
 * option. `svcsync` as another program's argument (`docker run --name svcsync -p ...`,
 * `docker exec svcsync svcsync check`) is not an invocation.
 */
export function isInvocation(words: readonly string[]): boolean {
  const first = words[0];
  if (first === undefined || first === 'svcsync') return false;
  return /^[a-z]/.test(first) || GLOBAL_OPTIONS.includes(first.split('=')[0]);
}

const optionFor = (cmd: Command | null, flag: string): Option | undefined => {
  for (let c = cmd; c; c = c.parent) {
    const found = c.options.find((o) => o.long === flag || o.short === flag || (o.negate && o.long === flag));
    if (found) return found;
  }
  return undefined;
};

/** What is wrong with one documented command line: unknown subcommands, options or streams. */
export function problems(words: readonly string[]): string[] {
  const out: string[] = [];
  let cmd: Command = PROGRAM;
  let positionals = 0;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word.startsWith('-') && word !== '-') {
      const [flag, inline] = word.includes('=') ? [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)] : [word, undefined];
      if (flag === '--help' || flag === '-h') continue;
      const option = optionFor(cmd, flag);
      if (!option) {
        out.push(`${cmd.name()} has no option ${flag}`);
        continue;
      }
      let value = inline;
      if (value === undefined && option.required) value = words[++i];
      else if (value === undefined && option.optional && words[i + 1] !== undefined && !words[i + 1]!.startsWith('-')) value = words[++i];
      if (value !== undefined && /^--stream/.test(flag)) out.push(...streamProblems(value));
      continue;
    }
    const sub = positionals === 0 ? cmd.commands.find((c) => c.name() === word || c.aliases().includes(word)) : undefined;
    if (sub) {
      cmd = sub;
      continue;
    }
    if (cmd.commands.length > 0 && cmd.registeredArguments.length === 0) out.push(`${cmd.name()} has no subcommand ${word}`);
    positionals++;
  }
  return out;
}

function streamProblems(list: string): string[] {
  return list
    .split(',')
    .filter((name) => name !== '' && name !== '...' && !/^[A-Z]+$|[{}<>]/.test(name))
    .filter((name) => !STREAMS.has(name))
    .map((name) => `no stream ${name} in the catalog`);
}
