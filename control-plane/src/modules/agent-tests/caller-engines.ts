// The engines of a caller-speech plan (caller-speech.ts says which, and why). Apart from the plan so that the
// speech plugins load with the first voice-mode test, not with every control plane (voice.ts imports this lazily).
import type { CallerSpeech } from '../../../../shared/sim-caller.ts';
import { createSTT, createTTS, ensureAgentsLogger, SPEECH_BASE_URL_ENV, type SpeechBaseUrlEnv, type TranscriberConfig, type TtsConfig } from '../../../../shared/speech/providers.ts';
import type { CallerSpeechPlan, OrgKeys } from './caller-speech.ts';

/**
 * The engines of a plan, with the org's keys and the operator's base URLs and nothing else: only the *_BASE_URL
 * settings are read from `config`, so no platform key (in the control plane's environment or its config) can be
 * picked.
 */
export function buildCallerSpeech(plan: CallerSpeechPlan, keys: OrgKeys, config: Partial<Record<SpeechBaseUrlEnv, string>>): CallerSpeech {
  ensureAgentsLogger();
  const urls = Object.fromEntries(SPEECH_BASE_URL_ENV.map((name) => [name, config[name]]));
  const orgOnly = { openai: keys.openai, deepgram: keys.deepgram, elevenlabs: keys.elevenlabs, cartesia: keys.cartesia };
  const tts = createTTS(plan.tts satisfies TtsConfig, orgOnly, { language: plan.language }, urls);
  try {
    return { tts, stt: plan.stt ? createSTT(plan.stt satisfies TranscriberConfig, orgOnly, urls, 'clips') : null };
  } catch (err) {
    void tts.close().catch(() => {});
    throw err;
  }
}
