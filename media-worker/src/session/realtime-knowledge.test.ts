// Knowledge retrieval on a realtime (speech-to-speech) model: the real CallSession and the openai plugin's
// RealtimeModel against the local Realtime double, the searches answered by the internal API's double. A realtime
// model answers on its own end of turn, so `retrieve` is a tool it calls (knowledge-tool.ts): the caller's question
// makes the model search, the search goes to the control plane with the call's id, its chunks reach the model as
// the tool's output, and the model speaks the answer they hold. A `stuff` agent gets no such tool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { InternalApiClient } from '../../../shared/internal-api.ts';
import type { CallConfig } from '../../../schemas/internal.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import { baseConfig, startRealtimeCall, waitUntil } from './harness.test-support.ts';
import { KNOWLEDGE_TOOL_NAME } from './knowledge-tool.ts';

const CHUNK = 'The Nimbus battery lasts ninety minutes on one charge.';
let fake: FakeOpenAI;
let internal: FakeInternalApi;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeOpenAI({ realtime: { apiKeys: ['sk-platform'], firstAudioMs: [300, 500] } });
  internal = await startFakeInternalApi();
  internal.search = (_callId, query) =>
    /battery/i.test(query) ? { chunks: [{ content: CHUNK, score: 0.9, source_id: 'src_1', title: 'Nimbus manual', heading: 'Battery' }] } : { chunks: [] };
  // The double's model searches for a battery question, then says what the search returned.
  fake.setRealtimeTranscriber(() => 'How long does the battery last?');
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    if (fixed) return { text: fixed[1]! };
    const last = turn.items.at(-1);
    if (last?.type === 'function_call_output') return { text: /ninety minutes/.test(last.output ?? '') ? 'It lasts ninety minutes.' : 'I do not know.' };
    if (/battery/i.test(turn.lastUser)) return { toolCalls: [{ name: KNOWLEDGE_TOOL_NAME, arguments: { query: 'battery life' } }] };
    return { text: 'You are welcome.' };
  });
});
afterAll(async () => {
  await fake?.close();
  await internal?.close();
});

function realtimeCall(id: string, knowledge: CallConfig['knowledge']) {
  const config = baseConfig({
    call: { id },
    agent: { first_message: 'Hello, Nimbus support.' },
    llm: { provider: 'openai', model: 'gpt-realtime', base_url: null, temperature: null, max_tokens: null, realtime: { voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 } },
    knowledge,
  });
  const realtime = createRealtimeModel(config.llm as Parameters<typeof createRealtimeModel>[0], {}, { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform' });
  return startRealtimeCall(config, realtime, { api: new InternalApiClient({ baseUrl: internal.url, token: internal.token }) });
}

describe('knowledge on a realtime model', () => {
  it('retrieve: the model searches through its tool, and speaks what the search found', async () => {
    const { call, line, out, agentTexts } = await realtimeCall('call_rt_kb', { knowledge_base_ids: ['kb_1'], mode: 'retrieve' });
    await waitUntil(() => agentTexts().includes('Hello, Nimbus support.'), 20_000, 'greeting');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'greeting played');
    await line.say(await synthesize('How long does the battery last?', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes('It lasts ninety minutes.'), 30_000, 'the answer from the knowledge base');
    const report = await call.end('user_hangup');
    await line.close();

    const conn = fake.realtime.at(-1)!;
    expect(conn.session.tools.map((t: { name: string }) => t.name)).toContain(KNOWLEDGE_TOOL_NAME);
    // One search, the model's query, for this call; no search before the turn (the pipeline's way) on top of it.
    expect(internal.searches).toEqual([{ callId: 'call_rt_kb', query: 'battery life', top_k: 4 }]);
    const output = conn.items.find((i: { type: string }) => i.type === 'function_call_output') as { output?: string } | undefined;
    expect(output?.output).toContain(CHUNK);
    expect(output?.output).toContain('Nimbus manual');
    expect(report.messages.map((m) => (m.tool_call ? `tool ${m.tool_call.name}` : m.content))).toEqual(expect.arrayContaining([`tool ${KNOWLEDGE_TOOL_NAME}`, 'It lasts ninety minutes.']));
  });

  it('stuff: the knowledge is in the instructions, and the model gets no search tool', async () => {
    const before = fake.realtime.length;
    const { call, line } = await realtimeCall('call_rt_stuff', { knowledge_base_ids: ['kb_1'], mode: 'stuff', stuffed_context: CHUNK });
    await waitUntil(() => fake.realtime.length > before && !!fake.realtime.at(-1)?.session?.instructions, 20_000, 'the session update');
    const conn = fake.realtime.at(-1)!;
    expect((conn.session.tools ?? []).map((t: { name: string }) => t.name)).not.toContain(KNOWLEDGE_TOOL_NAME);
    expect(conn.session.instructions).toContain(CHUNK);
    await call.end('user_hangup');
    await line.close();
  });
});
