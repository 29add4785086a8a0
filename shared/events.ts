// Event names and payloads sent to webhooks. Shared by the control plane (which stores and delivers them)
// and the media workers (whose reports cause them). Every payload also carries `id` (the event id, equal to
// the `webhook-id` header), `event` (its name) and `created_at` (when the event was emitted).

/** The call events of the spec, in the order they normally happen. */
export const CALL_EVENTS = [
  'call.started',
  'call.ended',
  'call.analyzed',
  'call.failed',
  'call.recording.available',
  'transcript.partial',
  'transcript.final',
  // Beyond the spec: a call started on a squad passed from one agent to another (docs/decisions/033-squads.md).
  'call.handoff',
  // Beyond the spec: a person acted on a live call (docs/guides/calls.md, "Supervising a live call").
  'call.supervised',
] as const;
export type CallEventName = (typeof CALL_EVENTS)[number];

/** Events of agent test runs (modules/agent-tests); not about a call. */
export const TEST_RUN_EVENTS = ['test_run.completed'] as const;
export type TestRunEventName = (typeof TEST_RUN_EVENTS)[number];

/** A campaign's own events (beyond the spec's list; docs/decisions/022-campaigns-and-do-not-call.md). They name no call. */
export const CAMPAIGN_EVENTS = ['campaign.started', 'campaign.paused', 'campaign.completed'] as const;
export type CampaignEventName = (typeof CAMPAIGN_EVENTS)[number];

/** Sent only by `POST /v1/webhooks/{id}/test`, to that webhook; it cannot be subscribed to. */
export const TEST_EVENT = 'webhook.test';
export type EventName = CallEventName | TestRunEventName | CampaignEventName | typeof TEST_EVENT;

/** A webhook may subscribe to `*`: every event, including ones added later. */
export const ALL_EVENTS = '*';

export interface TranscriptMessage {
  role: 'agent' | 'user';
  content: string;
}

/**
 * The analysis in `call.ended` and `call.analyzed`, as on the Call resource: `status` and `method` say why
 * `outcome` or `summary` is null (schemas/events.ts has the JSON Schema the OpenAPI document lists).
 */
export interface EventAnalysis {
  summary: string | null;
  outcome: string | null;
  status: string;
  method: string | null;
}

/** The fields of each event, beyond `id`, `event` and `created_at`: the spec's table, and what it leaves open. */
export interface EventPayloads {
  'call.started': {
    call_id: string;
    agent_id: string;
    /** The agent version the call ran (GET /v1/agents/{id}/versions/{n}); null when it never reached a session. */
    agent_version?: number | null;
    to_number: string | null;
    from_number: string | null;
  };
  'call.ended': {
    call_id: string;
    agent_id: string;
    /** The agent version the call ran (GET /v1/agents/{id}/versions/{n}); null when it never reached a session. */
    agent_version?: number | null;
    status: string;
    duration_seconds: number | null;
    to_number: string | null;
    from_number: string | null;
    /**
     * The analysis' result: call.ended waits for it up to CALL_ENDED_ANALYSIS_WAIT_SECONDS. Null when it was not
     * ready by then, is off or failed (then `call.analyzed` brings it, if it comes); `outcome` also when the
     * extractive summary names none.
     */
    outcome: string | null;
    ai_summary: string | null;
    analysis: EventAnalysis;
  };
  'call.analyzed': {
    call_id: string;
    agent_id: string;
    /** The agent version the call ran (GET /v1/agents/{id}/versions/{n}); null when it never reached a session. */
    agent_version?: number | null;
    outcome: string | null;
    ai_summary: string | null;
    analysis: EventAnalysis;
  };
  'call.failed': {
    call_id: string;
    agent_id: string;
    /** The agent version the call ran (GET /v1/agents/{id}/versions/{n}); null when it never reached a session. */
    agent_version?: number | null;
    to_number: string | null;
    from_number: string | null;
    /**
     * A carrier-style label: `busy`, `no_answer`, `rejected`, `invalid_number`, `carrier_error`..., or
     * `configuration_error` when the worker could not build the call's agent.
     */
    reason: string;
    /** Why, when the platform knows: the call's `error` (a stable code, and the cause and fix in words); else null. */
    error: { code: string; message: string } | null;
  };
  'call.recording.available': {
    call_id: string;
    /** A download link signed when the delivery attempt is sent, valid RECORDING_URL_TTL_SECONDS (4 hours). */
    recording_url: string;
    /** The stable GET /v1/calls/{id}/recording: needs the API key, never expires, redirects to a fresh link. */
    recording_api_url: string;
  };
  /** A snapshot of the conversation so far; a later partial supersedes an earlier one. */
  'transcript.partial': {
    call_id: string;
    messages: TranscriptMessage[];
  };
  'transcript.final': {
    call_id: string;
    messages: TranscriptMessage[];
  };
  /** A squad's call passed from one agent to another, inside the same call. */
  'call.handoff': {
    call_id: string;
    /** The call's agent (the squad's entry agent), as on every call event. */
    agent_id: string;
    squad_id: string;
    from_agent_id: string;
    to_agent_id: string;
    /** Why, in the handing agent's words; null when it gave none. */
    reason: string | null;
    /** What the next agent got of the conversation: `full` or `summary`. */
    context: 'full' | 'summary';
    /** The hand-off's number in the call, from 1. */
    index: number;
    at: string;
  };
  /** A person acted on the live call (POST /v1/calls/{id}/control or /listen): the entry of its `supervision[]`. */
  'call.supervised': {
    call_id: string;
    agent_id: string;
    seq: number;
    action: string;
    actor_type: string;
    actor_id: string;
    at: string;
    details: Record<string, unknown>;
  };
  /** A test run finished (every scenario done) or was canceled; the counts are of its scenarios. */
  'test_run.completed': {
    test_run_id: string;
    agent_id: string;
    suite_id: string | null;
    mode: 'text' | 'voice';
    status: 'completed' | 'canceled';
    total: number;
    passed: number;
    failed: number;
    errored: number;
  };
  'webhook.test': {
    webhook_id: string;
    message: string;
  };
  /** The campaign began dialling (at its start_at, or at creation). */
  'campaign.started': {
    campaign_id: string;
    agent_id: string;
    name: string;
    contacts: number;
  };
  /**
   * No more calls are placed until it is resumed. `reason`: manual (PATCH), failure_rate (its stop_on rule, with
   * `failure_rate` and `window`), daily_call_limit, daily_spend_cap, from_number_unavailable.
   */
  'campaign.paused': {
    campaign_id: string;
    agent_id: string;
    name: string;
    reason: string;
    failure_rate?: number;
    window?: number;
  };
  /** Every contact has its final state; `contacts` counts them by state. */
  'campaign.completed': {
    campaign_id: string;
    agent_id: string;
    name: string;
    contacts: Record<string, number>;
  };
}

/**
 * Fields that each delivery attempt fills in rather than the stored event, because they expire: a link signed
 * with the event would be dead for a retry hours later (control-plane/src/modules/webhooks/render.ts).
 */
export interface RenderedAtDelivery {
  'call.recording.available': 'recording_url';
}

/** What `emitEvent` stores for an event: its payload without the fields rendered at delivery. */
export type StoredPayload<T extends EventName> = T extends keyof RenderedAtDelivery ? Omit<EventPayloads[T], RenderedAtDelivery[T]> : EventPayloads[T];

/** The JSON body a receiver gets. */
export type EventBody<T extends EventName = EventName> = { id: string; event: T; created_at: string } & EventPayloads[T];

export const isCallEvent = (name: string): name is CallEventName => (CALL_EVENTS as readonly string[]).includes(name);

/** Every event a webhook can subscribe to by name. */
export const SUBSCRIBABLE_EVENT_NAMES = [...CALL_EVENTS, ...CAMPAIGN_EVENTS, ...TEST_RUN_EVENTS] as const;
