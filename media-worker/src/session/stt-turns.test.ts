// The STT's own end of turn (Flux): the turn options it is given, the resumed turn read from the events agents-js
// gets, and the pinned agents-js internal that drops the early reply.
import { initializeLogger, normalizeLanguage, stt, type voice } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalSTT } from '../../../shared/speech/local-stt.ts';
import {
  EAGER_EOT_THRESHOLD,
  PREEMPTIVE_CANCEL_AGENTS_VERSION,
  PreemptiveCancelVersionError,
  applySttTurnTaking,
  assertPreemptiveCancelTarget,
  cancelPreemptiveReply,
  fluxTurnOptions,
  resumedTurns,
} from './stt-turns.ts';
import { installedAgentsVersion } from './agents-release.ts';

beforeAll(() => initializeLogger({ pretty: false, level: 'error' }));

const ev = (type: stt.SpeechEventType, text?: string): stt.SpeechEvent =>
  text === undefined ? { type } : { type, alternatives: [{ text, language: normalizeLanguage('en'), startTime: 0, endTime: 0, confidence: 0.9 }] };
const { START_OF_SPEECH, INTERIM_TRANSCRIPT, PREFLIGHT_TRANSCRIPT, FINAL_TRANSCRIPT, END_OF_SPEECH } = stt.SpeechEventType;

/** Runs events through resumedTurns; returns the index of each event before which onResumed was called, and what came out. */
async function watch(events: stt.SpeechEvent[]): Promise<{ resumedBefore: number[]; out: (stt.SpeechEvent | string)[] }> {
  const resumedBefore: number[] = [];
  const out: (stt.SpeechEvent | string)[] = [];
  const source = new ReadableStream<stt.SpeechEvent | string>({
    start(c) {
      for (const e of events) c.enqueue(e);
      c.close();
    },
  });
  for await (const e of source.pipeThrough(resumedTurns(() => resumedBefore.push(out.length)))) out.push(e);
  return { resumedBefore, out };
}

describe('resumedTurns', () => {
  it('calls back when an interim after the eager transcript has other words, before that interim reaches agents-js', async () => {
    const events = [
      ev(START_OF_SPEECH),
      ev(INTERIM_TRANSCRIPT, "I'd like to book a table for"),
      ev(PREFLIGHT_TRANSCRIPT, "I'd like to book a table for."),
      // TurnResumed and Updates with the same words (re-punctuated): not yet a change.
      ev(INTERIM_TRANSCRIPT, "I'd like to book a table for"),
      ev(INTERIM_TRANSCRIPT, "i'd like to book a table, for"),
      ev(INTERIM_TRANSCRIPT, "I'd like to book a table for four"),
      ev(INTERIM_TRANSCRIPT, "I'd like to book a table for four people"),
      ev(PREFLIGHT_TRANSCRIPT, "I'd like to book a table for four people."),
      ev(FINAL_TRANSCRIPT, "I'd like to book a table for four people."),
      ev(END_OF_SPEECH),
    ];
    const { resumedBefore, out } = await watch(events);
    // Once, just before the interim with "four"; every event passes through unchanged.
    expect(resumedBefore).toEqual([5]);
    expect(out).toEqual(events);
  });

  it('stays quiet without a preflight, when the turn ends on the eager transcript, and on a new turn', async () => {
    const { resumedBefore } = await watch([
      ev(INTERIM_TRANSCRIPT, 'What time'),
      ev(INTERIM_TRANSCRIPT, 'What time do you open'),
      ev(PREFLIGHT_TRANSCRIPT, 'What time do you open.'),
      ev(FINAL_TRANSCRIPT, 'What time do you open.'),
      ev(END_OF_SPEECH),
      // The next turn's words differ from the last eager transcript, but that turn is over.
      ev(START_OF_SPEECH),
      ev(INTERIM_TRANSCRIPT, 'And tomorrow'),
      ev(PREFLIGHT_TRANSCRIPT, 'And tomorrow.'),
      // An empty interim is no change.
      ev(INTERIM_TRANSCRIPT, ''),
      ev(FINAL_TRANSCRIPT, 'And tomorrow.'),
    ]);
    expect(resumedBefore).toEqual([]);
  });
});

describe('Flux turn options', () => {
  it('max_delay_ms is eot_timeout_ms (at least 500); the eager threshold only with preemptive generation', () => {
    expect(fluxTurnOptions({ max_delay_ms: 5000 }, true)).toEqual({ eotTimeoutMs: 5000, eagerEotThreshold: EAGER_EOT_THRESHOLD });
    expect(fluxTurnOptions({ max_delay_ms: 120 }, false)).toEqual({ eotTimeoutMs: 500, eagerEotThreshold: undefined });
  });

  it("sets them on a Flux STT with detection 'stt' only", () => {
    const flux = new deepgram.STTv2({ apiKey: 'k' });
    const t = { detection: 'stt', max_delay_ms: 2000 } as const;
    expect(applySttTurnTaking(flux, t, true)).toBe(true);
    const live = (flux.stream() as unknown as { _liveConfig(): Record<string, unknown>; close(): void });
    expect(live._liveConfig()).toMatchObject({ eot_timeout_ms: '2000', eager_eot_threshold: String(EAGER_EOT_THRESHOLD) });
    live.close();
    const quiet = new deepgram.STTv2({ apiKey: 'k' });
    expect(applySttTurnTaking(quiet, t, false)).toBe(true);
    const q = quiet.stream() as unknown as { _liveConfig(): Record<string, unknown>; close(): void };
    expect(q._liveConfig()).not.toHaveProperty('eager_eot_threshold');
    q.close();
    // Another detection, or an STT that is not Flux: nothing to set.
    expect(applySttTurnTaking(new deepgram.STTv2({ apiKey: 'k' }), { detection: 'transcript', max_delay_ms: 2000 }, true)).toBe(false);
    expect(applySttTurnTaking(new LocalSTT({ language: 'en-US' }), t, true)).toBe(false);
  });
});

describe('dropping the early reply (an agents-js internal, pinned)', () => {
  it('is pinned to the agents-js release it was checked against, and fails loudly on another', () => {
    expect(PREEMPTIVE_CANCEL_AGENTS_VERSION).toBe(installedAgentsVersion());
    expect(() => assertPreemptiveCancelTarget()).not.toThrow();
    expect(() => assertPreemptiveCancelTarget('1.10.0')).toThrow(PreemptiveCancelVersionError);
  });

  it("calls the activity's own cancel, does nothing without an activity, and fails loudly if the method is gone", () => {
    let cancelled = 0;
    const session = (activity: unknown) => ({ _activity: activity }) as unknown as voice.AgentSession;
    cancelPreemptiveReply(session({ cancelPreemptiveGeneration: () => cancelled++ }));
    expect(cancelled).toBe(1);
    expect(() => cancelPreemptiveReply(session(undefined))).not.toThrow();
    expect(() => cancelPreemptiveReply(session({}))).toThrow(PreemptiveCancelVersionError);
  });
});
