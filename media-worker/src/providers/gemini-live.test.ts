// Gemini Live's settings as the worker hands them to the google plugin: the record's turn detection as Gemini's
// activity detection, GEMINI_BASE_URL split into the SDK's base URL and API version, and the refusals before any
// connection (a base_url, no key). The session itself runs in session/gemini-live-call.test.ts; egress and keys in
// test/security/realtime-egress.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import { GEMINI_REALTIME_DEFAULTS, type RealtimeSettings } from '../../../schemas/models.ts';
import { ProviderConfigError } from '../../../shared/providers.ts';
import { GuardedGeminiLiveModel, geminiActivityDetection, liveBase } from './gemini-live.ts';
import { createRealtimeModel } from './realtime.ts';

const settings = (over: Partial<RealtimeSettings> = {}): RealtimeSettings => ({ ...GEMINI_REALTIME_DEFAULTS, ...over });
const config = (over: Partial<RealtimeSettings> = {}, base_url: string | null = null) => ({ provider: 'gemini' as const, model: 'gemini-live-2.5-flash-preview', base_url, temperature: null, max_tokens: null, realtime: settings(over) });

beforeAll(() => initializeLogger({ pretty: false, level: 'fatal' }));

describe('Gemini Live settings', () => {
  it("maps server_vad to Gemini's automatic activity detection (with the silence when set) and platform to none", () => {
    expect(geminiActivityDetection(settings())).toEqual({ automaticActivityDetection: { disabled: false } });
    expect(geminiActivityDetection(settings({ silence_duration_ms: 700 }))).toEqual({ automaticActivityDetection: { disabled: false, silenceDurationMs: 700 } });
    expect(geminiActivityDetection(settings({ turn_detection: 'platform' }))).toEqual({ automaticActivityDetection: { disabled: true } });
  });

  it("splits the API version off the endpoint's base URL (the SDK adds it to the Live path itself)", () => {
    expect(liveBase('https://generativelanguage.googleapis.com/v1beta')).toEqual({ baseUrl: 'https://generativelanguage.googleapis.com', apiVersion: 'v1beta' });
    expect(liveBase('https://gateway.example.com/gemini/v1alpha')).toEqual({ baseUrl: 'https://gateway.example.com/gemini', apiVersion: 'v1alpha' });
    expect(liveBase('https://gateway.example.com/gemini')).toEqual({ baseUrl: 'https://gateway.example.com/gemini' });
  });

  it("builds the plugin's model with the voice, the transcriptions and the platform's turn detection", () => {
    const model = createRealtimeModel(config({ voice: 'Charon', turn_detection: 'platform' }), { gemini: 'gm-org' }, {}) as GuardedGeminiLiveModel;
    expect(model).toBeInstanceOf(GuardedGeminiLiveModel);
    expect(model._options).toMatchObject({ voice: 'Charon', apiKey: 'gm-org', vertexai: false, inputAudioTranscription: {}, outputAudioTranscription: {}, apiVersion: 'v1beta', httpOptions: { baseUrl: 'https://generativelanguage.googleapis.com' } });
    // The platform's turn detection: the plugin reports none of its own, so the session's VAD ends turns.
    expect(model.capabilities.turnDetection).toBe(false);
    expect((createRealtimeModel(config(), { gemini: 'gm-org' }, {}) as GuardedGeminiLiveModel).capabilities.turnDetection).toBe(true);
  });

  it('refuses a base_url and a missing key before any connection', () => {
    expect(() => createRealtimeModel(config({}, 'https://models.example.com/v1beta'), { gemini: 'gm-org' }, {})).toThrow(ProviderConfigError);
    expect(() => createRealtimeModel(config(), {}, {})).toThrow(/GOOGLE_API_KEY or GEMINI_API_KEY/);
  });
});
