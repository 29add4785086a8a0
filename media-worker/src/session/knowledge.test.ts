// Knowledge at call time, end to end: a document uploaded through the real control plane (ingested by its
// pg-boss job), a call whose agent's model links the base, and the real voice loop. The caller asks a question
// whose answer is only in the document; the LLM's prompt for that turn must contain the chunk. Also: searches
// start on the transcript of the turn in progress and are cached per call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Document, Packer, Paragraph, HeadingLevel } from 'docx';
import { llm as agentsLlm } from '@livekit/agents';
import { startTestPlatform, type TestPlatform } from '../../../test/support/platform.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { InternalApiClient } from '../../../shared/internal-api.ts';
import { createLogger } from '../../../shared/logger.ts';
import { WorkerMetrics } from '../metrics.ts';
import { VapAgent } from './agent.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
let tp: TestPlatform;
let llm: FakeOpenAI;
let fake: FakeInternalApi;

beforeAll(async () => {
  tp = await startTestPlatform({ WORKER_TOKEN: WORKER });
  llm = await startFakeOpenAI({ ttftMs: 30 });
  fake = await startFakeInternalApi();
});
afterAll(async () => {
  await llm?.close();
  await fake?.close();
  await tp?.close();
});

async function uploadDocx(key: string): Promise<{ kbId: string; sourceId: string }> {
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Nimbus vacuum cleaner', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({ text: 'Battery', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('The Nimbus battery lasts ninety minutes on one charge and recharges in three hours.'),
          new Paragraph({ text: 'Filters', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('Wash the filter every month under cold water.'),
        ],
      },
    ],
  });
  const form = new FormData();
  form.append('type', 'file');
  form.append('file', new Blob([new Uint8Array(await Packer.toBuffer(doc))]), 'nimbus-manual.docx');
  const res = await fetch(`${tp.url}/v1/knowledge-bases/sources`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as { source: { kb_id: string; source_id: string }; job: { job_id: string } };
  expect(res.status).toBe(201);
  for (;;) {
    const job = await tp.request('get', `/v1/knowledge-bases/${body.source.kb_id}/jobs/${body.job.job_id}`, { key });
    if (job.body.status === 'succeeded') break;
    expect(job.body.status).not.toBe('failed');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { kbId: body.source.kb_id, sourceId: body.source.source_id };
}

describe('knowledge in the voice loop', () => {
  it('answers from an uploaded document: the chunk is in the LLM prompt of that turn', async () => {
    const { key, orgId } = await tp.createOrg('voice-kb');
    const { kbId } = await uploadDocx(key);
    const model = (await tp.request('post', '/v1/models', { key, body: { name: 'kb', model: 'gpt-4o-mini', knowledge_base_ids: [kbId] } })).body;
    const agent = (await tp.request('post', '/v1/agents', { key, body: { name: 'kb', llm_id: model.id } })).body;
    const [call] = await tp.sql<{ id: string }[]>`insert into calls (org_id, agent_id, type, status) values (${orgId}, ${agent.id}, 'web', 'queued') returning id`;
    // The knowledge part of the call config, as the control plane resolves it for the worker.
    const api = new InternalApiClient({ baseUrl: tp.url, token: WORKER });
    api.setCapability(call!.id, tp.capability(call!.id));
    const resolved = await api.getConfig(call!.id);
    expect(resolved.knowledge).toEqual({ knowledge_base_ids: [kbId], mode: 'retrieve' });

    llm.setResponder(() => ({ text: 'It lasts ninety minutes.' }));
    const metrics = new WorkerMetrics();
    const config = baseConfig({ call: { id: call!.id }, knowledge: resolved.knowledge });
    const h = await startCall(config, {
      llmUrl: llm.url,
      api: { url: tp.url, token: WORKER, capability: tp.capability(call!.id) },
      metrics,
      sttGrammar: '#JSGF V1.0;\ngrammar q;\npublic <q> = how long does the battery last;\n',
    });
    const before = llm.requests.length;
    await h.line.say(await synthesize('How long does the battery last'));
    await waitUntil(() => llm.requests.length > before, 30_000, 'LLM request');
    const prompt = llm.requests[before]!.messages.map(contentText).join('\n');
    expect(prompt).toContain('The Nimbus battery lasts ninety minutes on one charge');
    expect(prompt).toContain('Nimbus vacuum cleaner › Battery');
    expect(prompt).not.toContain('Wash the filter'); // only the relevant chunk (the other section is its own chunk)
    expect(h.call.agent.lastKnowledge[0]).toContain('ninety minutes');
    await h.call.end('user_hangup');
    await h.line.close();
    const text = await metrics.registry.getSingleMetricAsString('voice_knowledge_retrieval_seconds');
    expect(text).toMatch(/voice_knowledge_retrieval_seconds_count\{call_type="web",result="hit",prefetched="(yes|no)"\} 1/);
  }, 90_000);

  it('starts the search on the transcript of the turn in progress and reuses it for the turn', async () => {
    fake.searches.length = 0;
    fake.search = () => ({ chunks: [{ content: 'Parcels to Lyon take two days.', score: 0.5, source_id: 's1', heading: 'Shipping', title: 'faq.md' }] });
    const agent = new VapAgent({
      instructions: 'Be brief.',
      tools: [],
      knowledge: { knowledge_base_ids: ['kb_1'], mode: 'retrieve' },
      callId: 'call_prefetch',
      api: new InternalApiClient({ baseUrl: fake.url, token: fake.token }),
      logger: createLogger('test', 'silent'),
    });
    agent.onTranscript('how long', false); // too short to search
    agent.onTranscript('how long does a parcel', false);
    agent.onTranscript('How long does a parcel take', true);
    agent.onTranscript('to Lyon?', true);
    const ctx = agentsLlm.ChatContext.empty();
    await agent.onUserTurnCompleted(ctx, agentsLlm.ChatMessage.create({ role: 'user', content: 'How long does a parcel take, to Lyon?' }));
    expect(fake.searches.map((s) => s.query)).toEqual(['how long does a parcel', 'How long does a parcel take', 'How long does a parcel take to Lyon?']);
    expect(agent.lastRetrieval?.source).toBe('prefetched');
    const added = ctx.items.at(-1) as agentsLlm.ChatMessage;
    expect(added.textContent).toContain('[1] (faq.md › Shipping) Parcels to Lyon take two days.');
    // The same question later in the call is served from the call's cache.
    await agent.onUserTurnCompleted(agentsLlm.ChatContext.empty(), agentsLlm.ChatMessage.create({ role: 'user', content: 'how long does a parcel take to lyon' }));
    expect(fake.searches).toHaveLength(3);
  });
});
