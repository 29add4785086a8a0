// Every value the public API accepts for an agent (or a web call's overrides, or an LLM model) is one the
// media worker can act on. The enums are found by walking the schemas, so a value added to the API without
// a worker mapping fails here, and so does a new enum field nobody has taught this test about.
import { initializeLogger, llm, stt, tts } from '@livekit/agents';
import type { TSchema } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, CreateAgent, UpdateAgent } from '../../schemas/agents.ts';
import { CallOverrides } from '../../schemas/calls.ts';
import { InternalAgent } from '../../schemas/internal.ts';
import { CreateLlmModel, REALTIME_DEFAULTS, type RealtimeSettings } from '../../schemas/models.ts';
import { realtimeTurnDetection } from './providers/realtime.ts';
import { STT_DEFAULT_MODEL, TTS_DEFAULTS, type SttProvider, type TtsProvider } from '../../shared/voices.ts';
import { createLLM, createSTT, createTTS, inputSampleRateFor } from './providers/index.ts';
import { pausesOnOnset, turnHandlingFor } from './session/mappings.ts';
import type { TurnTaking } from '../../shared/turn-taking.ts';
import { CallPrivacy } from './session/privacy.ts';
import { RecordingConsent } from './session/recording-consent.ts';
import type { RecordingConsentMode } from '../../schemas/agents.ts';
import type { DataRetention } from '../../shared/privacy.ts';
import { ambientFrames, ambientPath, isAmbientSound, readWav, type AmbientSound } from './session/background.ts';

/** Every `enum` (and union of literals) in a JSON schema, by dotted property path. */
function enumsOf(schema: unknown, path: string[] = [], out = new Map<string, Set<string>>()): Map<string, Set<string>> {
  if (!schema || typeof schema !== 'object') return out;
  const s = schema as Record<string, unknown>;
  const add = (values: unknown[]) => {
    const key = path.join('.');
    const set = out.get(key) ?? new Set<string>();
    for (const v of values) if (typeof v === 'string') set.add(v);
    out.set(key, set);
  };
  if (Array.isArray(s.enum)) add(s.enum);
  if (typeof s.const === 'string') add([s.const]);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[k])) for (const sub of s[k] as unknown[]) enumsOf(sub, path, out);
  if (s.properties && typeof s.properties === 'object') {
    for (const [name, sub] of Object.entries(s.properties as Record<string, unknown>)) enumsOf(sub, [...path, name], out);
  }
  if (s.items) enumsOf(s.items, [...path, '[]'], out);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') enumsOf(s.additionalProperties, [...path, '*'], out);
  return out;
}

// A key for every provider, so that building a plugin fails only on a provider the worker does not know.
const KEYS = { openai: 'k', anthropic: 'k', gemini: 'k', deepgram: 'k', elevenlabs: 'k', cartesia: 'k' };

/** How the worker handles each enum field of the agent's configuration. */
const WORKER_CHECKS: Record<string, (value: string) => Promise<void> | void> = {
  'transcriber.provider': (value) => {
    const provider = value as SttProvider;
    const engine = createSTT({ provider, model: STT_DEFAULT_MODEL[provider], language: AGENT_DEFAULTS.language }, KEYS, {});
    expect(engine).toBeInstanceOf(stt.STT);
    expect(inputSampleRateFor(provider)).toBeGreaterThan(0);
  },
  'tts.provider': (value) => {
    const provider = value as TtsProvider;
    expect(createTTS({ provider, ...TTS_DEFAULTS[provider] }, KEYS, {}, {})).toBeInstanceOf(tts.TTS);
  },
  'turn_taking.detection': (value) => {
    const detector = { kind: 'end-of-turn model' } as never;
    const turn_taking = { ...AGENT_DEFAULTS.turn_taking, detection: value as TurnTaking['detection'] };
    const h = turnHandlingFor({ turn_taking, interruption_sensitivity: 0.5 }, { turnDetector: detector, preemptiveAllowed: true });
    // 'vad' and 'stt' (the STT's own end of turn, Deepgram Flux) are agents-js's own modes; the others a detector.
    expect(h.turnDetection).toBe(value === 'vad' || value === 'stt' ? value : detector);
  },
  'turn_taking.endpointing': (value) => {
    const turn_taking = { ...AGENT_DEFAULTS.turn_taking, endpointing: value as 'fixed' | 'dynamic' };
    const h = turnHandlingFor({ turn_taking, interruption_sensitivity: 0.5 }, { turnDetector: 'vad', preemptiveAllowed: true });
    expect(h.endpointing).toMatchObject({ mode: value, minDelay: turn_taking.min_delay_ms, maxDelay: turn_taking.max_delay_ms });
  },
  'turn_taking.barge_in': (value) => {
    const turn_taking = { ...AGENT_DEFAULTS.turn_taking, barge_in: value as TurnTaking['barge_in'] };
    const h = turnHandlingFor({ turn_taking, interruption_sensitivity: 0.5 }, { turnDetector: 'vad', preemptiveAllowed: true });
    // 'pause' and 'pause_on_speech' pause on sound and need no word for it ('pause' sooner, on the onset of the
    // sound: the call's own); 'words' waits for a word.
    expect(h.interruption).toMatchObject(value === 'words' ? { minWords: 1 } : { minWords: 0, resumeFalseInterruption: true });
    expect(pausesOnOnset(0.5, turn_taking)).toBe(value === 'pause');
  },
  data_retention: (value) => {
    const privacy = new CallPrivacy(value as DataRetention);
    const [said] = privacy.ended([{ role: 'user', content: 'card 4111 1111 1111 1111' }]);
    expect(said!.content).toBe({ everything: 'card 4111 1111 1111 1111', redact_pii: 'card [card_number]', no_content: '' }[value]);
  },
  recording_consent: (value) => {
    const consent = new RecordingConsent(value as RecordingConsentMode, true, null);
    const spoken: string[] = [];
    const holds = consent.before(async (text) => void spoken.push(text), () => {});
    expect(spoken).toHaveLength(value === 'none' ? 0 : 1);
    expect(holds).toBe(value === 'ask');
  },
  background_sound: async (value) => {
    expect(isAmbientSound(value)).toBe(true);
    const wav = readWav(ambientPath(value as AmbientSound));
    expect(wav.samples.length).toBeGreaterThan(wav.sampleRate); // at least a second of loop
    const frames = ambientFrames(value as AmbientSound);
    const first = await frames.next();
    await frames.return(undefined);
    expect(first.value?.samplesPerChannel).toBeGreaterThan(0);
  },
};

const LLM_CHECKS: Record<string, (value: string) => void> = {
  provider: (value) => {
    // `local` is the operator's: a local OpenAI-compatible server here (a GGUF file needs weights the tests lack).
    const env = { LOCAL_LLM_BASE_URL: 'https://llm.example.com/v1' };
    expect(createLLM({ provider: value, model: 'some-model', base_url: null, temperature: null, max_tokens: null }, KEYS, env)).toBeInstanceOf(llm.LLM);
  },
  // A realtime model's turn detection: the provider's (the plugin's server or semantic VAD), or the platform's (none).
  'realtime.turn_detection': (value) => {
    const settings = { ...REALTIME_DEFAULTS, turn_detection: value as RealtimeSettings['turn_detection'] };
    const detection = realtimeTurnDetection(settings);
    if (value === 'platform') expect(detection).toBeNull();
    else expect(detection).toMatchObject({ type: value, create_response: true, interrupt_response: true });
  },
  'realtime.eagerness': (value) => {
    const settings = { ...REALTIME_DEFAULTS, turn_detection: 'semantic_vad' as const, eagerness: value as RealtimeSettings['eagerness'] };
    expect(realtimeTurnDetection(settings)).toMatchObject({ type: 'semantic_vad', eagerness: value });
  },
};

beforeAll(() => initializeLogger({ pretty: false, level: 'error' }));

describe.each([
  ['CreateAgent', CreateAgent, WORKER_CHECKS],
  ['UpdateAgent', UpdateAgent, WORKER_CHECKS],
  ['CallOverrides', CallOverrides, WORKER_CHECKS],
  ['CreateLlmModel', CreateLlmModel, LLM_CHECKS],
] as [string, TSchema, Record<string, (v: string) => unknown>][])('every enum value of %s', (_name, schema, checks) => {
  const enums = [...enumsOf(schema)].filter(([, values]) => values.size > 0);

  it('has a worker check for each enum field', () => {
    expect(enums.length).toBeGreaterThan(0);
    for (const [path] of enums) expect(checks[path], `no worker check for the enum at ${path}: teach the worker and this test its values`).toBeDefined();
  });

  for (const [path, values] of enums) {
    for (const value of values) {
      it(`${path} = ${value} is known to the worker`, async () => {
        await checks[path]?.(value);
      });
    }
  }
});

describe('the session config the worker validates', () => {
  it('has the same enums as the public agent (derived, not restated)', () => {
    const internal = enumsOf(InternalAgent);
    for (const [path, values] of enumsOf(CreateAgent)) expect([...(internal.get(path) ?? [])].sort(), path).toEqual([...values].sort());
  });

  it('accepts every value the API accepts', () => {
    const check = new Ajv2020({ strict: false }).compile(InternalAgent);
    const base = {
      id: 'a', name: 'n', ...AGENT_DEFAULTS,
      transcriber: { ...AGENT_DEFAULTS.transcriber, language: AGENT_DEFAULTS.language },
    };
    for (const [path, values] of enumsOf(CreateAgent)) {
      for (const value of values) {
        const [head, tail] = path.split('.') as [keyof typeof base, string | undefined];
        const agent = tail ? { ...base, [head]: { ...(base[head] as object), [tail]: value } } : { ...base, [head]: value };
        expect(check(agent), `${path}=${value}: ${JSON.stringify(check.errors)}`).toBe(true);
      }
    }
  });
});

describe('preemptive generation', () => {
  it('starts the LLM and the TTS before the turn commits, where the call allows it', () => {
    for (const preemptive_generation of [true, false]) {
      const turn_taking = { ...AGENT_DEFAULTS.turn_taking, preemptive_generation };
      expect(turnHandlingFor({ turn_taking, interruption_sensitivity: 0.5 }, { turnDetector: 'vad', preemptiveAllowed: true }).preemptiveGeneration).toMatchObject({ enabled: preemptive_generation, preemptiveTts: true });
      expect(turnHandlingFor({ turn_taking, interruption_sensitivity: 0.5 }, { turnDetector: 'vad', preemptiveAllowed: false }).preemptiveGeneration?.enabled).toBe(false);
    }
  });
});
