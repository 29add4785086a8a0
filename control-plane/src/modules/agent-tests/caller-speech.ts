// The simulated caller's own speech in a voice-mode agent test (voice.ts): the org's cloud speech providers when
// it has credentials for them, else the offline profile's local voices. Rules (docs/decisions/020-agent-tests.md,
// "Voice mode"):
//  - keys: the org's own credentials only. The caller's speech is a cost of the org's test, so a platform key
//    never pays for it (the worker may fall back to one for the agent's own speech; the caller does not), and
//    the engines are built with no platform key in reach: resolveKey finds the org's key or none.
//  - endpoints: the providers' own APIs, or the operator's *_BASE_URL (a gateway, a test double), exactly as the
//    worker reaches them; nothing a tenant chooses, so no key goes to a tenant's URL.
//  - STT (a persona only; a script does not listen): the agent's own STT provider and model when the org has a
//    key for it, else Deepgram, then OpenAI, else pocketsphinx. A Flux model (an end of turn of its own) gives way
//    to its provider's default model: the caller transcribes whole clips, each ended by a flush, and Flux ends a
//    turn only on silence in the stream.
//  - TTS: the agent's TTS provider and model when the org has a key for it, else OpenAI, Cartesia, ElevenLabs,
//    then Deepgram (its plugin's one-shot synthesis, which the caller uses for whole lines, always goes to port
//    443 and so ignores an operator's DEEPGRAM_BASE_URL port), in a voice that is not the agent's: one of the
//    other gender where the catalogue knows both, so a recording tells the two apart; else festival.
import type { CredentialProvider } from '../../../../schemas/credentials.ts';
import type { AgentRow } from '../agents/queries.ts';
import { STT_DEFAULT_MODEL, STT_MODELS, TTS_DEFAULTS, VOICES, findVoice, isTurnModel, languageMatches, type SttProvider, type TtsProvider } from '../../../../shared/voices.ts';

export type OrgKeys = Partial<Record<CredentialProvider, string>>;

/** What the caller speaks and listens with; `stt` is null when it does not listen. */
export interface CallerSpeechPlan {
  /** The agent's language: the caller speaks it too (a provider that takes one is told). */
  language: string;
  stt: { provider: SttProvider; model: string; language: string } | null;
  tts: { provider: TtsProvider; model: string; voice_id: string };
}

type AgentSpeech = Pick<AgentRow, 'transcriber' | 'tts' | 'language'>;

/** The offline profile's caller: festival speaks (the voice pocketsphinx hears best), pocketsphinx listens (English only). */
export const OFFLINE_CALLER: { stt: NonNullable<CallerSpeechPlan['stt']>; tts: CallerSpeechPlan['tts'] } = {
  stt: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
  tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
};

const CLOUD_STT: SttProvider[] = ['deepgram', 'openai'];
const CLOUD_TTS: TtsProvider[] = ['openai', 'cartesia', 'elevenlabs', 'deepgram'];

const hasKey = (keys: OrgKeys, provider: string): boolean => provider !== 'local' && !!keys[provider as CredentialProvider];

function sttFor(agent: AgentSpeech, keys: OrgKeys): CallerSpeechPlan['stt'] {
  const own = agent.transcriber;
  if (hasKey(keys, own.provider)) return { provider: own.provider, model: isTurnModel(own) ? STT_DEFAULT_MODEL[own.provider] : own.model, language: own.language };
  for (const provider of CLOUD_STT) {
    if (!hasKey(keys, provider)) continue;
    const model = STT_DEFAULT_MODEL[provider];
    const spoken = STT_MODELS.find((m) => m.provider === provider && m.model === model)!;
    if (spoken.languages.some((l) => languageMatches(l, agent.language))) return { provider, model, language: agent.language };
  }
  return OFFLINE_CALLER.stt;
}

/** A voice of `provider`'s `model` in the agent's language that is not the agent's, of another gender if one exists. */
function voiceFor(provider: TtsProvider, model: string, agent: AgentSpeech): string | null {
  const theirs = findVoice(agent.tts.provider, agent.tts.voice_id);
  const candidates = VOICES.filter(
    (v) =>
      v.provider === provider &&
      v.models.includes(model) &&
      v.languages.some((l) => languageMatches(l, agent.language)) &&
      !(v.provider === agent.tts.provider && v.voice_id === agent.tts.voice_id),
  );
  const other = theirs?.gender ? candidates.find((v) => v.gender && v.gender !== 'neutral' && v.gender !== theirs.gender) : undefined;
  return (other ?? candidates[0])?.voice_id ?? null;
}

function ttsFor(agent: AgentSpeech, keys: OrgKeys): CallerSpeechPlan['tts'] {
  const own = agent.tts;
  const order = hasKey(keys, own.provider) ? [own.provider, ...CLOUD_TTS.filter((p) => p !== own.provider)] : CLOUD_TTS;
  for (const provider of order) {
    if (!hasKey(keys, provider)) continue;
    const model = provider === own.provider ? own.model : TTS_DEFAULTS[provider].model;
    const voice = voiceFor(provider, model, agent);
    if (voice) return { provider, model, voice_id: voice };
  }
  return OFFLINE_CALLER.tts;
}

/** The caller's speech for a test of this agent: `listens` for a persona, whose caller must understand the agent. */
export function planCallerSpeech(agent: AgentSpeech, keys: OrgKeys, listens: boolean): CallerSpeechPlan {
  return { language: agent.language, stt: listens ? sttFor(agent, keys) : null, tts: ttsFor(agent, keys) };
}
