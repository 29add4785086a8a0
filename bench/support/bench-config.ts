// The call config of the voice benchmarks: an agent whose knobs match the bare baseline (endpointing
// 200 ms, VAD interruptions), with the silence and duration limits out of the way.
import type { CallConfig } from '../../schemas/internal.ts';
import { delaysFor } from '../../shared/turn-taking.ts';

export function baseConfigForBench(id: string): CallConfig {
  return {
    call: { id, type: 'web', direction: null, to_number: null, from_number: null, variables: {}, metadata: {} },
    agent: {
      id: 'agent_bench', name: 'Bench', transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
      tts: { provider: 'local', voice_id: 'en-us', model: 'espeak-ng' }, first_message: null, end_call_phrases: ['goodbye'],
      max_duration_seconds: 24 * 3600, interruption_sensitivity: 0.5, silence_timeout_seconds: 24 * 3600, enable_recording: false,
      language: 'en-US', dynamic_variables: {}, voicemail_detection: false, voicemail_message: null, responsiveness: 1, speed: 1,
      background_sound: null, emotions: false, job_description: null, data_retention: null, recording_consent: 'none', recording_consent_message: null, metadata: {},
      // Pinned (not the API's defaults) so the benchmark's baseline does not move when the defaults do.
      turn_taking: { detection: 'model', endpointing: 'fixed', ...delaysFor(1), preemptive_generation: true, ignore_backchannels: false, barge_in: 'words' },
    },
    prompt: 'You are a helpful assistant.',
    llm: { provider: 'openai', model: 'fake', base_url: null, temperature: null, max_tokens: null },
    tools: [{ type: 'end_call' }],
    knowledge: { knowledge_base_ids: [], mode: 'stuff' },
    provider_keys: {},
    recording: { enabled: false },
    destination_policy: { allowed_countries: [], blocked_number_types: [], allowed_sip_hosts: [], fictional_numbers: false },
  };
}
