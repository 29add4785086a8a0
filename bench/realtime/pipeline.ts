// bench:realtime's pipeline arm: the stand-ins of an STT -> LLM -> TTS agent's third parties, timed like them (with
// jitter, seeded), and what each took of a turn, read from the stand-ins themselves:
//   - STT: the Deepgram stand-in (test/support/fake-deepgram.ts) in its realistic mode: words released 150-350 ms
//     after they are said, the final after 100-400 ms of silence (its endpoint), periods from the words and the
//     silence so far (realistic-stt.ts). Its part of a turn: the silence in the audio when it sent the turn's last
//     final (its endpoint delay; the audio's clock runs with the wall's);
//   - LLM: the OpenAI-compatible stand-in (fake-openai.ts) with a time to first token drawn in 200-350 ms, then a
//     token every 15 ms (a fast hosted model). Its part: the drawn first token and the reply's streaming;
//   - TTS: the same stand-in's /audio/speech with espeak-ng's synthesis, then a first byte drawn in 100-150 ms. Its
//     part: the request's arrival to its audio (the synthesis included, as the Realtime double's first audio has it).
// LLM and TTS together take 300-500 ms plus the synthesis and the streaming: the Realtime double's own first audio
// (300-500 ms after the end of the turn, plus the same synthesis). None of these is Deepgram's or OpenAI's timing.
import { nowMs } from '../../test/support/rtc-client.ts';
import { startFakeDeepgram, type DeepgramConnection, type FakeDeepgram, type Script } from '../../test/support/fake-deepgram.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../test/support/fake-openai.ts';
import { mixSeed, seededRandom, uniform } from '../../test/support/seeded-random.ts';
import { resample, synthesize } from '../../test/support/speech.ts';
import type { Clip, RoomTurn } from '../support/room-call.ts';

const LLM_TTFT_MS = { min: 200, max: 350 };
const LLM_TOKEN_MS = 15;
const TTS_TTFB_MS = { min: 100, max: 150 };
const SEED = 54;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stand-ins' timings, as the results file records them. */
export const STAND_INS = {
  stt: 'Deepgram stand-in (test/support/fake-deepgram.ts), realistic mode: words 150-350 ms after they are said, final after 100-400 ms of silence, seeded per turn',
  llm: `OpenAI-compatible stand-in (test/support/fake-openai.ts): first token ${LLM_TTFT_MS.min}-${LLM_TTFT_MS.max} ms (seeded), then a token every ${LLM_TOKEN_MS} ms`,
  tts: `the same stand-in's /audio/speech: espeak-ng's synthesis, then first byte ${TTS_TTFB_MS.min}-${TTS_TTFB_MS.max} ms (seeded)`,
};

interface Timed {
  at: number;
  ms: number;
}

export interface PipelineStandIns {
  deepgram: FakeDeepgram;
  llm: FakeOpenAI;
  /** Streamed chat completions: arrival (wall-clock ms) and the stand-in's time to the reply's last token. */
  completions: (Timed & { index: number })[];
  /** Speech requests: arrival and the time to their audio. */
  speech: Timed[];
  close(): Promise<void>;
}

export async function startPipelineStandIns(reply: string): Promise<PipelineStandIns> {
  const llmRandom = seededRandom(mixSeed(SEED, 1));
  const ttsRandom = seededRandom(mixSeed(SEED, 2));
  const completions: PipelineStandIns['completions'] = [];
  const speech: Timed[] = [];
  const deepgram = await startFakeDeepgram({ realistic: { seed: SEED } });
  const llm = await startFakeOpenAI({
    chunkDelayMs: LLM_TOKEN_MS,
    speaker: async (text) => {
      const at = nowMs();
      const pcm = resample(await synthesize(text, 'espeak-ng'), 24000).samples;
      await sleep(uniform(ttsRandom, TTS_TTFB_MS));
      speech.push({ at, ms: nowMs() - at });
      return pcm;
    },
  });
  llm.setResponder((req, index) => {
    // The post-call analysis asks for JSON, not streamed: off the turns' path.
    if (!req.stream) return { text: JSON.stringify({ summary: 'Benchmark call.', outcome: 'benchmark' }), ttftMs: 0 };
    const ttftMs = uniform(llmRandom, LLM_TTFT_MS);
    const tokens = reply.match(/\S+\s*/g)?.length ?? 1;
    completions.push({ index, at: nowMs(), ms: ttftMs + (tokens - 1) * LLM_TOKEN_MS });
    return { text: reply, ttftMs };
  });
  return {
    deepgram,
    llm,
    completions,
    speech,
    async close() {
      await deepgram.close();
      await llm.close();
    },
  };
}

/** The Deepgram stand-in's script of a clip: its words over its speech. */
export function scriptOf(clip: Clip, speechStartMs: number, seed: number): Script {
  return { segments: [{ text: clip.text, startMs: speechStartMs, endMs: clip.speechEnd48 }], seed };
}

/**
 * A pipeline call's STT connection: the newest open one made since the call began (`from`: the count before it),
 * waiting up to 30 s for the first.
 */
export async function callConnection(deepgram: FakeDeepgram, from: number): Promise<DeepgramConnection> {
  const end = Date.now() + 30_000;
  for (;;) {
    const conn = deepgram.connections.slice(from).filter((c) => !c.closed).at(-1);
    if (conn) return conn;
    if (Date.now() > end) throw new Error('no Deepgram stand-in connection for the call');
    await sleep(20);
  }
}

export interface StandInParts {
  stt_final_ms: number;
  llm_ms: number;
  tts_ms: number;
  /** Their sum: what the stand-ins take of the turn when nothing of theirs overlaps. */
  stand_ins_ms: number;
}

/**
 * What the stand-ins took of a turn: the turn's last final before the answer was heard, the last completion and the
 * last speech request that began after the caller stopped and before the answer was heard (the ones that answered:
 * an earlier speculative completion is superseded by a later one).
 */
export function standInParts(s: PipelineStandIns, conn: DeepgramConnection, turn: RoomTurn): StandInParts {
  const inTurn = <T extends Timed>(xs: T[]) => xs.filter((x) => x.at > turn.speech_end_at - 500 && x.at < turn.heard_at).at(-1);
  const final = inTurn(conn.sent.filter((m) => m.type === 'Results' && m.is_final).map((m) => ({ at: m.at, ms: m.silence_ms ?? NaN })));
  const llm = inTurn(s.completions.filter((c) => !s.llm.completions[c.index]?.aborted));
  const tts = inTurn(s.speech);
  if (!final || !llm || !tts) throw new Error(`a turn without its stand-ins' records (final ${!!final}, completion ${!!llm}, speech ${!!tts})`);
  return { stt_final_ms: final.ms, llm_ms: llm.ms, tts_ms: tts.ms, stand_ins_ms: final.ms + llm.ms + tts.ms };
}
