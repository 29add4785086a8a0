// The voice catalogue: static data from shared/voices.ts, which the team keeps up to date with the providers.
import { defineRoute } from '../../http/route.ts';
import { VoiceList, VoiceListQuery } from '../../../../schemas/voices.ts';
import { listVoices } from '../../../../shared/voices.ts';

export const voiceRoutes = [
  defineRoute({
    method: 'get',
    path: '/voices',
    operationId: 'listVoices',
    tag: 'voices',
    summary: 'List voices',
    description:
      'The text-to-speech voices each supported provider offers (openai, deepgram, elevenlabs, cartesia, and the local ' +
      'espeak-ng and festival voices that need no network), filterable by `provider`, `language` and `model`. The ' +
      'catalogue is static data shipped with the platform and kept up to date by its maintainers, not fetched from the ' +
      'providers at request time; an agent\'s `tts.voice_id` must be one of these. Publishable keys with the ' +
      '`voices:read` scope may call this route.',
    publishableScope: 'voices:read',
    query: VoiceListQuery,
    responses: { 200: { description: 'Voices, in catalogue order (by provider)', schema: VoiceList } },
    handler: async ({ query }) => {
      const all = listVoices({ provider: query.provider, language: query.language }).filter((v) => !query.model || v.models.includes(query.model));
      return { items: all.slice(query.offset, query.offset + query.limit), total: all.length, limit: query.limit, offset: query.offset };
    },
  }),
];
