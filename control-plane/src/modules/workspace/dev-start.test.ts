// The first start of a development platform: the organisation, its key printed once, and a first agent on what the
// platform has; later starts name the organisation without claiming to have made it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform } from '../../../../test/support/platform.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { announceDevOrg } from './dev-start.ts';

let llm: FakeOpenAI;
beforeAll(async () => {
  llm = await startFakeOpenAI({});
});
afterAll(() => llm.close());

const keyOf = (text: string) => /API key: (\S+)/.exec(text)![1]!;
const agentOf = (text: string) => /Agent: {3}First agent \(([0-9a-f-]{36})\)/.exec(text)![1]!;

describe('announceDevOrg', () => {
  it('with nothing: makes the organisation and a local agent whose warnings say what it waits for; a restart does not say "created"', async () => {
    const tp = await usePlatform();
    const first = await announceDevOrg(tp.sql, tp.config, tp.url);
    expect(first).toContain('Development organisation created.');
    // It cannot talk yet, and says why rather than sending the developer to the playground.
    expect(first).toContain('It cannot talk yet: The agent\'s model uses provider local and there is no local model on this platform');
    expect(first).not.toContain('Talk to it');
    const key = keyOf(first);
    const agent = await tp.request('get', `/v1/agents/${agentOf(first)}`, { key });
    expect(agent.body).toMatchObject({
      name: 'First agent',
      first_message: expect.any(String),
      transcriber: { provider: 'local', model: 'pocketsphinx' },
      tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
      warnings: [{ code: 'local_model_missing', field: 'llm_id', message: expect.any(String) }],
    });
    expect((await tp.request('get', `/v1/models/${agent.body.llm_id}`, { key })).body).toMatchObject({ provider: 'local', model: 'llama3.2' });

    const again = await announceDevOrg(tp.sql, tp.config, tp.url);
    expect(again).toMatch(/Development organisation: [0-9a-f-]{36} \(made on the first start/);
    expect(again).not.toContain('created');
    expect(again).not.toContain('vap_sk_');
    expect((await tp.request('get', '/v1/agents', { key })).body.total).toBe(1);
  });

  it("with a local server: the agent is on its first model, ready to talk", async () => {
    const tp = await usePlatform({ LOCAL_LLM_BASE_URL: llm.url });
    const first = await announceDevOrg(tp.sql, tp.config, tp.url);
    expect(first).toContain(`fake-model on the local server (LOCAL_LLM_BASE_URL ${llm.url})`);
    expect(first).toContain(`Talk to it: ${tp.url}/playground`);
    const agent = await tp.request('get', `/v1/agents/${agentOf(first)}`, { key: keyOf(first) });
    expect(agent.body.warnings).toEqual([]);
    expect((await tp.request('get', `/v1/models/${agent.body.llm_id}`, { key: keyOf(first) })).body).toMatchObject({ provider: 'local', model: 'fake-model' });
  });

  it('with a cloud key: the cloud model and its speech', async () => {
    const tp = await usePlatform({ OPENAI_API_KEY: 'sk-test-platform-0123456789' });
    const first = await announceDevOrg(tp.sql, tp.config, tp.url);
    expect(first).toContain('openai gpt-4o-mini (OPENAI_API_KEY)');
    expect(first).not.toContain('sk-test-platform');
    const agent = await tp.request('get', `/v1/agents/${agentOf(first)}`, { key: keyOf(first) });
    expect(agent.body).toMatchObject({ transcriber: { provider: 'openai' }, tts: { provider: 'openai' }, warnings: [] });
  });
});
