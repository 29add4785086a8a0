// Turn-taking behaviour over the real stack (LiveKit, control plane, media worker) with the turn-taking rig
// (bench/turn-taking/rig.ts): an rtc-node caller speaks corpus utterances, the Deepgram stand-in transcribes
// them from their labels, and the agent answers through the OpenAI stand-ins. Outcomes are counted over
// several utterances (a busy machine can spoil one), never timed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disposeRtc } from '../support/rtc-client.ts';
import { loadCorpus, type CorpusItem } from '../../bench/turn-taking/corpus.ts';
import { createAgent, endCall, runBackchannel, runBargeIn, runTurn, startCall, startRig, type CallHandle, type Rig } from '../../bench/turn-taking/rig.ts';

let rig: Rig;
let corpus: CorpusItem[];
let call: CallHandle;

/** `n` items of a category, the same on every run. */
const items = (category: CorpusItem['category'], n: number, voice = 'en-us') => corpus.filter((i) => i.category === category && i.voice === voice).slice(0, n);

beforeAll(async () => {
  corpus = await loadCorpus();
  rig = await startRig();
  // The agent's defaults (no turn_taking): what a customer gets.
  const agentId = await createAgent(rig, 'Turn-taking', 'deepgram', null);
  call = await startCall(rig, agentId, 'deepgram');
}, 240_000);

afterAll(async () => {
  if (call) await endCall(rig, call).catch(() => {});
  await rig?.close();
  await disposeRtc();
});

describe('turn-taking over WebRTC', () => {
  it('a sentence with a pause mid-way is not cut off: the agent answers after the end', async () => {
    const results = [];
    // The five with the longest pauses (750-870 ms): long enough for a reply committed at the pause to be
    // heard in it (the defaults answer some 700 ms after the end of speech), so a turn taken too early shows.
    const longest = corpus.filter((i) => i.category === 'pause' && i.voice === 'en-us').sort((a, b) => b.pauses_ms[0]! - a.pauses_ms[0]!).slice(0, 5);
    for (const item of longest) results.push(await runTurn(call, item));
    expect(results.filter((r) => !r.cut_in && r.replied).length, JSON.stringify(results)).toBeGreaterThanOrEqual(4);
  }, 180_000);

  it('a complete question is answered', async () => {
    const results = [];
    for (const item of items('complete', 5)) results.push(await runTurn(call, item));
    expect(results.filter((r) => r.replied && !r.cut_in).length, JSON.stringify(results)).toBeGreaterThanOrEqual(4);
  }, 180_000);

  it('a barge-in stops the agent', async () => {
    const results = [];
    for (const item of items('complete', 3, 'en-gb+f3')) results.push(await runBargeIn(rig, call, item));
    const valid = results.filter((r) => r.valid);
    expect(valid.length, JSON.stringify(results)).toBeGreaterThanOrEqual(2);
    expect(valid.filter((r) => r.stop_ms !== null).length, JSON.stringify(results)).toBeGreaterThanOrEqual(valid.length - 1);
  }, 240_000);

  it('a backchannel does not stop the agent', async () => {
    const results = [];
    for (const item of items('backchannel', 4)) results.push(await runBackchannel(rig, call, item));
    const valid = results.filter((r) => r.valid);
    expect(valid.length, JSON.stringify(results)).toBeGreaterThanOrEqual(3);
    expect(valid.filter((r) => !r.stopped).length, JSON.stringify(results)).toBeGreaterThanOrEqual(valid.length - 1);
  }, 240_000);
});
