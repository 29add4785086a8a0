// Supervising a live call: the public control and listen routes, and the worker's side (its actions to take).
import { defineRoute } from '../../http/route.ts';
import { CallParams } from '../../../../schemas/calls.ts';
import { ControlCallRequest, ControlCallResult, ListenResult, WorkerSupervisionList } from '../../../../schemas/supervision.ts';
import { controlCall, listenToCall } from './supervision.ts';
import { takeSupervisionOutbox } from './queries-supervision.ts';

const meta = (ctx: { state: { requestId: string }; ip: string }) => ({ requestId: ctx.state.requestId, ip: ctx.ip || null });
const SECRET_ONLY = 'Secret API keys (and dashboard users) only: a publishable key gets 403.';
const NOT_LIVE = 'A call that is not `in_progress` (queued, ringing, ended) is a 409; another organisation\'s call is a 404.';

export const supervisionRoutes = [
  defineRoute({
    method: 'post',
    path: '/calls/:call_id/control',
    operationId: 'controlCall',
    tag: 'calls',
    summary: 'Steer a live call: say, whisper, mute, take over, hand back, transfer, end',
    description:
      'One action per request. `say`: the agent says `text` (`when` `now` interrupts it, `after_current` waits for its current ' +
      "speech); it enters the transcript as the agent's, marked `supervisor: \"say\"`. `whisper`: `text` reaches only the agent's " +
      'model, as an instruction for its next replies; the caller hears nothing, and the transcript marks it (an agent message with ' +
      'empty `content` and `supervisor: "whisper"`). `mute_agent`: the agent stops speaking and replying (it keeps listening, and ' +
      'what the caller says stays in its context) until `unmute_agent`. `takeover`: a person speaks to the caller in the agent\'s ' +
      'place: the answer\'s `takeover` holds a LiveKit token (TAKEOVER_TOKEN_TTL_SECONDS, 60 s by default, to join) that may publish ' +
      'the microphone only and hear both sides; the agent stops speaking and replying, and keeps transcribing: the caller\'s words and ' +
      "the person's (marked `supervisor: \"takeover\"` in the transcript) enter its context. One takeover at a time: a second one, or a " +
      '`say`, is a 409 until `hand_back`, which removes the person from the room and gives the call back to the agent, which goes on ' +
      'knowing what was said (a 409 when the call is not taken over). `transfer`: a blind transfer of a phone call to ' +
      '`destination`, through the same destination policy and daily spend cap as the transfer_call tool (`details.status` says ' +
      'whether it went: `transferred`, `refused`, `failed`). `end`: ends the call as POST /v1/calls/{id}/stop does. Each action ' +
      "is recorded in the call's `supervision[]` (who: the API key id), the audit log (`call.supervise.<action>`) and a " +
      `\`call.supervised\` event. ${SECRET_ONLY} ${NOT_LIVE}`,
    params: CallParams,
    body: ControlCallRequest,
    transaction: false,
    responses: { 200: { description: 'The action, as recorded', schema: ControlCallResult } },
    handler: async ({ params, body, auth, services, ctx }) => controlCall(services, auth, params.call_id, body, meta(ctx)),
  }),
  defineRoute({
    method: 'post',
    path: '/calls/:call_id/listen',
    operationId: 'listenToCall',
    tag: 'calls',
    summary: 'Listen to a live call',
    description:
      'A short-lived LiveKit token (LISTEN_TOKEN_TTL_SECONDS, 60 s by default, to join) for a hidden participant that can only ' +
      "subscribe: join `server_url` with it to hear both sides, web and phone calls alike. Nobody in the room sees it, and it can " +
      "publish neither audio nor data. Recorded in the call's `supervision[]` (action `listen`), the audit log and a " +
      `\`call.supervised\` event. ${SECRET_ONLY} ${NOT_LIVE}`,
    params: CallParams,
    transaction: false,
    responses: { 200: { description: 'How to join as a listener', schema: ListenResult } },
    handler: async ({ params, auth, services, ctx }) => listenToCall(services, auth, params.call_id, meta(ctx)),
  }),
  defineRoute({
    method: 'get',
    path: '/internal/v1/calls/:call_id/supervision',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallSupervision',
    tag: 'calls',
    summary: "The supervisor's actions for the worker to take (say, whisper, mute, takeover, hand_back), in order; each is given once",
    params: CallParams,
    responses: { 200: { description: 'The actions not taken yet', schema: WorkerSupervisionList } },
    handler: async ({ params, db }) => ({ items: await takeSupervisionOutbox(db, params.call_id) }),
  }),
];
