// The model and agent most end-to-end files create through the API: the LLM stand-in (fake-openai.ts) as the
// org's model, and an agent on it that hears and speaks on this machine, so a call needs no cloud service.
import { expect } from 'vitest';

/** What these need of a client: apiClient's, or a file's own with the same call shape. */
type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** festival's voice: the one the files' grammars and spoken-length checks are made with. */
export const FESTIVAL_TTS = { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' };

/** POST /v1/models for the stand-in at `baseUrl` (`fields` add to or replace the body's); returns its id. */
export async function createStandInModel(api: Api, baseUrl: string, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await api('POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: baseUrl, ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/**
 * POST /v1/agents with local STT, festival's voice and a 120 s silence timeout (the default 30 s could end a
 * call during a test's longer waits); `fields` add to or replace these. Returns the agent's id.
 */
export async function createLocalAgent(api: Api, fields: { name: string; llm_id: string } & Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/v1/agents', { transcriber: { provider: 'local' }, tts: FESTIVAL_TTS, silence_timeout_seconds: 120, ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}
