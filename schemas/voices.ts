import { Type, StringEnum, ListEnvelope, Pagination } from './common.ts';
import { TTS_PROVIDERS } from '../shared/voices.ts';

export const Voice = Type.Object(
  {
    provider: StringEnum(TTS_PROVIDERS),
    voice_id: Type.String({ description: 'The value for `tts.voice_id`' }),
    name: Type.String(),
    gender: Type.Union([StringEnum(['female', 'male', 'neutral']), Type.Null()]),
    languages: Type.Array(Type.String(), { description: 'BCP-47 tags the voice speaks' }),
    models: Type.Array(Type.String(), { description: 'Values of `tts.model` the voice works with' }),
  },
  {
    title: 'Voice',
    additionalProperties: false,
    examples: [
      { provider: 'openai', voice_id: 'alloy', name: 'Alloy', gender: 'neutral', languages: ['en', 'de', 'fr'], models: ['gpt-4o-mini-tts', 'tts-1', 'tts-1-hd'] },
      { provider: 'local', voice_id: 'en-gb', name: 'eSpeak NG English (Great Britain)', gender: 'male', languages: ['en-GB'], models: ['espeak-ng'] },
    ],
  },
);

export const VoiceList = ListEnvelope(Voice, 'Voice');
export const VoiceListQuery = Type.Composite(
  [
    Pagination({ default: 50, maximum: 100 }),
    Type.Object({
      provider: Type.Optional(StringEnum(TTS_PROVIDERS)),
      language: Type.Optional(
        Type.String({
          pattern: '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$',
          description: 'BCP-47 tag; `en` matches `en-US` and `en-GB`, `en-US` matches `en-US` and `en`',
        }),
      ),
      model: Type.Optional(Type.String({ maxLength: 100, description: 'Only voices that work with this TTS model' })),
    }),
  ],
  { additionalProperties: false },
);
