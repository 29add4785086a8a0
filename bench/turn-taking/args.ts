// bench:turns's command line: configuration names, `--stt oracle|realistic` (repeatable, or comma-separated) and
// `--corpus FILE` (repeatable). Unknown options are refused, so a typo does not run two hours of the wrong thing.
import path from 'node:path';
import { DEFAULT_CORPORA } from './corpus-file.ts';

export const STT_MODES = ['realistic', 'oracle'] as const;
export type SttMode = (typeof STT_MODES)[number];

export interface BenchArgs {
  /** Configuration names to run (none: all but `current`). */
  configs: string[];
  /** In the order given; the first is the headline (default: realistic). */
  stt: SttMode[];
  corpora: string[];
}

export const USAGE = 'usage: node bench/turn-taking/run.ts [config names...] [--stt realistic|oracle]... [--corpus FILE]...';

export function parseArgs(argv: string[], cwd = process.cwd()): BenchArgs {
  const configs: string[] = [];
  const stt: SttMode[] = [];
  const corpora: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = /^(--[\w-]+)=(.*)$/.exec(arg);
    const flag = eq ? eq[1]! : arg;
    const value = () => {
      const v = eq ? eq[2] : argv[++i];
      if (v === undefined || v === '') throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    if (flag === '--stt') {
      for (const m of value().split(',')) {
        if (!STT_MODES.includes(m as SttMode)) throw new Error(`--stt ${m}: one of ${STT_MODES.join(', ')}\n${USAGE}`);
        if (!stt.includes(m as SttMode)) stt.push(m as SttMode);
      }
    } else if (flag === '--corpus') corpora.push(path.resolve(cwd, value()));
    else if (flag.startsWith('-')) throw new Error(`unknown option ${flag}\n${USAGE}`);
    else configs.push(arg);
  }
  return { configs, stt: stt.length ? stt : ['realistic'], corpora: corpora.length ? corpora : [...DEFAULT_CORPORA] };
}
