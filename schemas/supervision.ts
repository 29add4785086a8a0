// Supervising a live call (docs/guides/calls.md, "Supervising a live call"): the control actions a person sends,
// what the call's record keeps of them, the listen token, and what the worker reads of them.
import { Type, DateTime, Strict, StringEnum, type Static } from './common.ts';

/** The actions of POST /v1/calls/{id}/control. */
export const CONTROL_ACTIONS = ['say', 'whisper', 'mute_agent', 'unmute_agent', 'takeover', 'hand_back', 'transfer', 'end'] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];
/** Everything `supervision[]` records: the control actions and the listen tokens handed out. */
export const SUPERVISION_ACTIONS = [...CONTROL_ACTIONS, 'listen'] as const;
export type SupervisionAction = (typeof SUPERVISION_ACTIONS)[number];
/** The actions the call's media worker carries out (the others the control plane does itself). */
export const WORKER_ACTIONS = ['say', 'whisper', 'mute_agent', 'unmute_agent', 'takeover', 'hand_back'] as const;
export type WorkerAction = (typeof WORKER_ACTIONS)[number];

/**
 * The identity prefix of a supervisor's participant (listen and takeover tokens). Only the control plane mints
 * tokens, so a participant named so is one: the worker never takes it for the caller (docs/decisions/supervise-control-channel.md).
 */
export const SUPERVISOR_IDENTITY_PREFIX = 'supervisor-';
export const isSupervisorIdentity = (identity: string | undefined): boolean => !!identity?.startsWith(SUPERVISOR_IDENTITY_PREFIX);

export const SAY_MAX = 1000;
export const WHISPER_MAX = 4000;

export const ControlCallRequest = Strict(
  {
    action: StringEnum(CONTROL_ACTIONS, { description: 'One action per request' }),
    text: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: WHISPER_MAX,
        description: `\`say\`: what the agent says (up to ${SAY_MAX} characters). \`whisper\`: the message only the agent's model receives (up to ${WHISPER_MAX})`,
      }),
    ),
    when: Type.Optional(
      StringEnum(['now', 'after_current'] as const, {
        description: '`say` only: `now` interrupts what the agent is saying; `after_current` (the default) waits for its current speech to finish',
      }),
    ),
    destination: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: '`transfer` only: an E.164 number or a `sip:` URI, checked by the destination policy as the transfer_call tool is' }),
    ),
  },
  {
    title: 'ControlCallRequest',
    examples: [
      { action: 'say', text: 'Let me get a colleague to help you with that.', when: 'after_current' },
      { action: 'whisper', text: 'The customer is a VIP: offer the premium slot.' },
      { action: 'takeover' },
      { action: 'hand_back' },
      { action: 'transfer', destination: '+14155550123' },
      { action: 'end' },
    ],
  },
);
export type ControlCallRequest = Static<typeof ControlCallRequest>;

export const SupervisionEntry = Type.Object(
  {
    seq: Type.Integer({ minimum: 1, description: "The action's number in the call, from 1" }),
    action: StringEnum(SUPERVISION_ACTIONS),
    actor_type: StringEnum(['api_key', 'user'] as const, { description: 'Who acted: a secret API key, or a dashboard user' }),
    actor_id: Type.String({ description: 'The API key id (or the dashboard user id)' }),
    at: DateTime(),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "The action's fields (`text`, `when`, `destination`) and, for `transfer`, its `status` and `message`; for `listen` and `takeover`, the token's `identity` and `expires_at` (never the token); for `hand_back`, the `identity` handed back from",
    }),
  },
  { title: 'SupervisionEntry', additionalProperties: false },
);
export type SupervisionEntry = Static<typeof SupervisionEntry>;

export const TakeoverToken = Type.Object(
  {
    server_url: Type.String({ description: 'The LiveKit WebSocket URL to join with `participant_token`' }),
    participant_token: Type.String({
      description:
        "A LiveKit token for the person taking over: they may publish their microphone (nothing else: no data, no camera or screen) and hear the caller and the agent. The caller hears them; the agent is quiet until `hand_back`",
    }),
    identity: Type.String({ description: "The person's participant identity (`supervisor-...`)" }),
    expires_at: DateTime({ description: 'The token cannot join after this (TAKEOVER_TOKEN_TTL_SECONDS); a person already in the room stays until `hand_back` removes them or the call ends' }),
  },
  { title: 'TakeoverToken', additionalProperties: false },
);
export type TakeoverToken = Static<typeof TakeoverToken>;

export const ControlCallResult = Type.Object(
  {
    call_id: Type.String(),
    supervision: SupervisionEntry,
    takeover: Type.Optional({ ...TakeoverToken, description: '`takeover` only: how the person joins the call to speak to the caller' }),
  },
  {
    title: 'ControlCallResult',
    additionalProperties: false,
    examples: [
      {
        call_id: '7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f',
        supervision: { seq: 3, action: 'takeover', actor_type: 'api_key', actor_id: '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b', at: '2026-01-05T10:00:00.000Z', details: { identity: 'supervisor-5f0c0a4e-8f4e-4a53-9a43-2f3b0a8e6c11', expires_at: '2026-01-05T10:01:00.000Z' } },
        takeover: {
          server_url: 'wss://livekit.example.com',
          participant_token: 'eyJhbGciOiJIUzI1NiJ9...',
          identity: 'supervisor-5f0c0a4e-8f4e-4a53-9a43-2f3b0a8e6c11',
          expires_at: '2026-01-05T10:01:00.000Z',
        },
      },
    ],
  },
);
export type ControlCallResult = Static<typeof ControlCallResult>;

export const ListenResult = Type.Object(
  {
    call_id: Type.String(),
    server_url: Type.String({ description: 'The LiveKit WebSocket URL to join with `participant_token`' }),
    participant_token: Type.String({
      description: 'A LiveKit token for a hidden participant that can only subscribe: it hears both sides, publishes nothing (no audio, no data), and nobody in the room sees it',
    }),
    identity: Type.String({ description: "The listener's participant identity (`supervisor-...`)" }),
    expires_at: DateTime({ description: 'The token cannot join after this (LISTEN_TOKEN_TTL_SECONDS); a listener already in the room stays until it leaves or the call ends' }),
    stream_url: Type.String({
      description:
        'For a server: a WebSocket (`wss://` when the API is served over https) that streams the call as PCM, 16 kHz, 16-bit little-endian, ' +
        'two channels interleaved (0 the caller, 1 the agent), 20 ms a frame, after a text `start` message and until a text `end` one. ' +
        'Its `ticket` opens one connection, until `expires_at`; the client sends nothing',
    }),
  },
  { title: 'ListenResult', additionalProperties: false },
);
export type ListenResult = Static<typeof ListenResult>;

/** GET /internal/v1/calls/{id}/supervision: the worker's actions not taken yet, in order (each is given once). */
export const WorkerSupervisionItem = Strict(
  {
    seq: Type.Integer({ minimum: 1 }),
    action: StringEnum(WORKER_ACTIONS),
    text: Type.Optional(Type.String({ maxLength: WHISPER_MAX })),
    when: Type.Optional(StringEnum(['now', 'after_current'] as const)),
    /** `takeover`: the person's participant, whose microphone the worker transcribes. */
    identity: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { title: 'WorkerSupervisionItem' },
);
export type WorkerSupervisionItem = Static<typeof WorkerSupervisionItem>;
export const WorkerSupervisionList = Strict({ items: Type.Array(WorkerSupervisionItem) }, { title: 'WorkerSupervisionList' });
export type WorkerSupervisionList = Static<typeof WorkerSupervisionList>;

/** The data message's topic: a server-sent notice to the agent participant that actions wait (no content). */
export const SUPERVISION_TOPIC = 'vap.supervision';
