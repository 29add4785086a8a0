// The turn-taking benchmark's false cut-offs, premature commits and budget figures (bench/turn-taking/cut-offs.ts),
// on commits placed by hand around a spoken turn.
import { describe, expect, it } from 'vitest';
import {
  cutOffRateAtLatencyBudget,
  latencyAtCutOffBudget,
  operatingPoint,
  scoreTurn,
  summarizeCutOffs,
  type Commit,
  type OperatingPoint,
  type SpokenTurn,
} from '../bench/turn-taking/cut-offs.ts';

// Speech 0-1000, pause 1000-1600, speech 1600-2400, pause 2400-3000, speech 3000-4000 (the true end).
const turn: SpokenTurn = { call_id: 'c1', kind: 'pause', speech_start_at: 0, speech_end_at: 4000, pauses_at: [[1000, 1600], [2400, 3000]] };
const commit = (at: number, eou_delay_ms = 150, call_id = 'c1'): Commit => ({ call_id, at, eou_delay_ms });

describe('scoring a turn against the worker commits', () => {
  it('no commit before the end: every pause held, the end commit found', () => {
    expect(scoreTurn(turn, [commit(4200, 180), commit(9000)])).toEqual({ premature: 0, pauses: ['held', 'held'], end: commit(4200, 180) });
  });

  it('a commit in a pause, or in the speech after it before the next pause, cuts that pause; later pauses are not scored', () => {
    expect(scoreTurn(turn, [commit(1300), commit(4200)]).pauses).toEqual(['cut', 'unscored']);
    // Decided in the first pause, logged once the caller went on (a late final).
    expect(scoreTurn(turn, [commit(1900), commit(4200)]).pauses).toEqual(['cut', 'unscored']);
    expect(scoreTurn(turn, [commit(2700), commit(3500), commit(4200)])).toMatchObject({ premature: 2, pauses: ['held', 'cut'] });
  });

  it("a commit inside the first segment is premature but no pause's; commits of other calls and the true end's are not premature", () => {
    expect(scoreTurn(turn, [commit(500)])).toMatchObject({ premature: 1, pauses: ['unscored', 'unscored'] });
    expect(scoreTurn(turn, [commit(1300, 150, 'c2'), commit(3950)])).toMatchObject({ premature: 0, pauses: ['held', 'held'], end: commit(3950) });
  });
});

describe("a configuration's figures", () => {
  it('counts false cut-offs over scored pauses, premature commits per utterance, and latency on clean ends only', () => {
    const turns: SpokenTurn[] = [
      { ...turn, call_id: 'a' },
      { ...turn, call_id: 'b' },
      { call_id: 'c', kind: 'complete', speech_start_at: 0, speech_end_at: 1000, pauses_at: [] },
    ];
    const s = summarizeCutOffs(turns, [commit(1200, 150, 'a'), commit(4300, 900, 'a'), commit(4200, 200, 'b'), commit(1150, 160, 'c')]);
    expect(s).toMatchObject({ pauses_scored: 3, false_cut_offs: 1, pauses_unscored: 1, false_cut_off_rate: 0.3333 });
    expect(s.premature_commits).toMatchObject({ utterances: 3, commits: 1, utterances_with_any: 1, per_utterance: 0.3333 });
    expect(s.premature_commits.by_kind.pause).toEqual({ utterances: 2, commits: 1, per_utterance: 0.5 });
    expect(s.end_latency_ms).toMatchObject({ n: 2, mean: 180 });
  });

  it('reports cut-offs by pause length and the share of pauses longer than the floor', () => {
    // Pauses of 400, 800, 1200 and 2000 ms; the worker commits in the 1200 ms one.
    const long: SpokenTurn = { call_id: 'l', kind: 'pause', speech_start_at: 0, speech_end_at: 9000, pauses_at: [[1000, 1400], [2000, 2800], [3500, 4700], [5500, 7500]] };
    const s = summarizeCutOffs([long], [commit(4500, 150, 'l'), commit(9200, 150, 'l')], 1000);
    expect(s.by_pause_ms).toEqual({
      '<500': { scored: 1, cut: 0, rate: 0 },
      '500-1000': { scored: 1, cut: 0, rate: 0 },
      '1000-1500': { scored: 1, cut: 1, rate: 1 },
      // After the first cut-off the call is answering: not scored.
      '>1500': { scored: 0, cut: 0, rate: NaN },
    });
    // Of the three scored pauses, one (1200 ms) is longer than the 1000 ms floor.
    expect(s.share_longer_than_floor).toBeCloseTo(1 / 3, 3);
    expect(summarizeCutOffs([long], [commit(9200, 150, 'l')], 300).share_longer_than_floor).toBe(1);
    expect(summarizeCutOffs([long], [], null).share_longer_than_floor).toBeNull();
  });

  it('budget figures: the best point within the latency budget, the fastest within the cut-off budget, null when none is', () => {
    const p = (name: string, rate: number, mean: number): OperatingPoint => ({ name, min_delay_ms: null, max_delay_ms: null, false_cut_off_rate: rate, pauses_scored: 100, mean_latency_ms: mean, ends: 100 });
    const points = [p('150', 0.3, 200), p('300', 0.12, 290), p('500', 0.04, 520), p('800', 0.01, 830)];
    expect(cutOffRateAtLatencyBudget(points)).toEqual({ value: 0.12, at: '300' });
    expect(latencyAtCutOffBudget(points)).toEqual({ value: 520, at: '500' });
    expect(cutOffRateAtLatencyBudget([p('slow', 0.01, 900)])).toBeNull();
    expect(latencyAtCutOffBudget([p('eager', 0.2, 150)])).toBeNull();
    expect(operatingPoint('x', { min_delay_ms: 150, max_delay_ms: 1500 }, summarizeCutOffs([turn], [commit(4200)]))).toMatchObject({ min_delay_ms: 150, false_cut_off_rate: 0, mean_latency_ms: 150, ends: 1 });
  });
});
