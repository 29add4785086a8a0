// bench:turns's command line and the sweep of the delays (bench/turn-taking/args.ts, configs.ts).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../bench/turn-taking/args.ts';
import { DEFAULT_SWEEP, deepgramConfigs, parseSweep, sweepConfigs } from '../bench/turn-taking/configs.ts';
import { DEFAULT_CORPORA } from '../bench/turn-taking/corpus-file.ts';

describe('bench:turns arguments', () => {
  it('defaults: every configuration, the realistic stand-in, both committed corpora', () => {
    expect(parseArgs([])).toEqual({ configs: [], stt: ['realistic'], corpora: DEFAULT_CORPORA });
  });

  it('takes configurations, STT modes (repeated or comma-separated, in order) and corpora (relative to the working folder)', () => {
    const a = parseArgs(['transcript', '--stt', 'oracle', '--stt=realistic,oracle', '--corpus', 'mine.json', 'silero', '--corpus=/x/y.json'], '/work');
    expect(a).toEqual({ configs: ['transcript', 'silero'], stt: ['oracle', 'realistic'], corpora: [path.resolve('/work', 'mine.json'), '/x/y.json'] });
  });

  it('refuses an unknown option, an unknown mode and a missing value', () => {
    expect(() => parseArgs(['--sst', 'oracle'])).toThrow(/unknown option --sst/);
    expect(() => parseArgs(['--stt', 'perfect'])).toThrow(/--stt perfect: one of realistic, oracle/);
    expect(() => parseArgs(['--corpus'])).toThrow(/--corpus needs a value/);
  });
});

describe('the sweep of the delays', () => {
  it('parses min/max pairs and refuses what the API would', () => {
    expect(parseSweep('300/1500, 600/1500')).toEqual([
      { min_delay_ms: 300, max_delay_ms: 1500 },
      { min_delay_ms: 600, max_delay_ms: 1500 },
    ]);
    expect(parseSweep('0')).toEqual([]);
    expect(parseSweep(DEFAULT_SWEEP).length).toBeGreaterThan(3);
    expect(() => parseSweep('300-1500')).toThrow(/not min\/max/);
    expect(() => parseSweep('1500/1000')).toThrow(/at least min/);
    expect(() => parseSweep('2500/3000')).toThrow(/0-2000/);
  });

  it("makes turn-only points of a configuration, without repeating the configuration's own delays", () => {
    const transcript = deepgramConfigs({ TURNS: 40, TURNS_BEST: 280, BARGE_INS_BEST: 120, BACKCHANNELS_BEST: 30 }).find((c) => c.name === 'transcript')!;
    const points = sweepConfigs(transcript, parseSweep('150/1500,500/1500'), 60);
    expect(points).toHaveLength(1);
    expect(points[0]).toMatchObject({ name: 'transcript@500/1500', sweepOf: 'transcript', turns: 60, bargeIns: 0, backchannels: 0 });
    expect(points[0]!.turnTaking).toMatchObject({ ...transcript.turnTaking, min_delay_ms: 500, max_delay_ms: 1500 });
    expect(points[0]!.label).toMatch(/at 500\/1500 ms$/);
  });
});
