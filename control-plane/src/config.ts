// Configuration from the environment, validated once at start-up with messages that name the variable.
import { Ajv } from 'ajv';
import { Type, type Static } from '@sinclair/typebox';
import { parsePrivateHosts } from '../../shared/model-egress.ts';
import { devLivekitCredentialsError } from '../../shared/livekit-credentials.ts';

// ---- Carriers (phone numbers). CARRIER picks the adapter; each carrier's platform credentials and settings
// follow. Customers never see these: numbers are bought and wired with the platform's own account.
const Transport = Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')], { default: 'udp' });
const CarrierEnv = {
  CARRIER: Type.Union([Type.Literal('simulated'), Type.Literal('twilio'), Type.Literal('telnyx')], { default: 'simulated', description: 'Where phone numbers are bought' }),
  CARRIER_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 120000, default: 10000, description: 'Deadline of one carrier API request' }),
  TWILIO_ACCOUNT_SID: Type.Optional(Type.String({ pattern: '^AC[0-9a-fA-F]{32}$' })),
  TWILIO_AUTH_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  TWILIO_API_BASE_URL: Type.String({ format: 'uri', default: 'https://api.twilio.com' }),
  TWILIO_TRUNKING_BASE_URL: Type.String({ format: 'uri', default: 'https://trunking.twilio.com' }),
  TWILIO_TRUNK_SID: Type.Optional(Type.String({ pattern: '^TK[0-9a-fA-F]{32}$' })),
  TWILIO_TRUNK_NAME: Type.String({ minLength: 1, maxLength: 64, default: 'vap' }),
  TWILIO_TERMINATION_DOMAIN: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]*\\.pstn\\.twilio\\.com$' })),
  TWILIO_TERMINATION_TRANSPORT: Transport,
  TWILIO_SIP_USERNAME: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._-]{1,32}$' })),
  TWILIO_SIP_PASSWORD: Type.Optional(Type.String({ minLength: 12, pattern: '^(?=.*[a-z])(?=.*[A-Z])(?=.*[0-9]).*$' })),
  TWILIO_SOURCE_ADDRESSES: Type.Optional(Type.String({ description: 'Comma-separated IPs/CIDRs; default Twilio\'s documented signalling ranges' })),
  TWILIO_INBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 0.34 }),
  TWILIO_OUTBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 0.47 }),
  TELNYX_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  TELNYX_API_BASE_URL: Type.String({ format: 'uri', default: 'https://api.telnyx.com' }),
  TELNYX_CONNECTION_ID: Type.Optional(Type.String({ minLength: 1 })),
  TELNYX_CONNECTION_NAME: Type.String({ minLength: 1, maxLength: 64, default: 'vap' }),
  TELNYX_OUTBOUND_VOICE_PROFILE_ID: Type.Optional(Type.String({ minLength: 1 })),
  TELNYX_TERMINATION_ADDRESS: Type.String({ minLength: 1, default: 'sip.telnyx.com' }),
  TELNYX_TERMINATION_TRANSPORT: Transport,
  TELNYX_SIP_USERNAME: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._-]{4,32}$' })),
  TELNYX_SIP_PASSWORD: Type.Optional(Type.String({ minLength: 8, maxLength: 128 })),
  TELNYX_SOURCE_ADDRESSES: Type.Optional(Type.String({ description: 'Comma-separated IPs/CIDRs; default Telnyx\'s documented signalling addresses' })),
  TELNYX_INBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 0.35 }),
  TELNYX_OUTBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 0.5 }),
  CARRIER_ACCOUNT_HEADER: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9-]{1,64}$',
      description:
        "SIP header that names the carrier account on every inbound INVITE, checked against CARRIER_ACCOUNT_VALUE (the carrier's ranges are shared by all its customers). Default for twilio: X-Twilio-AccountSid (value TWILIO_ACCOUNT_SID)",
    }),
  ),
  CARRIER_ACCOUNT_VALUE: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The value CARRIER_ACCOUNT_HEADER must carry' })),
  RATE_TABLE_PATH: Type.Optional(
    Type.String({ minLength: 1, description: 'CSV of per-minute rates by number prefix (carrier,direction,prefix,cents_per_minute); default the committed table (phone-numbers/rates/default.csv)' }),
  ),
};

/** The chosen carrier's credentials must be there: a platform that can't buy numbers should not start. */
function carrierConfigErrors(c: Static<typeof Env>): string[] {
  if (c.CARRIER === 'twilio') return (['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN'] as const).filter((k) => !c[k]).map((k) => `${k} must be set when CARRIER=twilio`);
  if (c.CARRIER === 'telnyx') return c.TELNYX_API_KEY ? [] : ['TELNYX_API_KEY must be set when CARRIER=telnyx'];
  if (!!c.CARRIER_ACCOUNT_HEADER !== !!c.CARRIER_ACCOUNT_VALUE) return ['CARRIER_ACCOUNT_HEADER and CARRIER_ACCOUNT_VALUE go together'];
  return [];
}
// ---- end of carriers

// ---- Outbound calls (modules/calls: POST /v1/calls, the dial job, the simulated carrier's termination edge)
const OutboundEnv = {
  OUTBOUND_RING_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, maximum: 120, default: 30, description: 'An outbound call not answered within this time fails with reason no_answer' }),
  STANDBY_AGENTS: Type.Integer({
    minimum: 0,
    maximum: 1000,
    default: 1,
    description: 'Agents kept joined and waiting in rooms of their own, each taken by the next web call (no dispatch on its path); 0: every call is dispatched',
  }),
  STANDBY_CLAIM_TIMEOUT_MS: Type.Integer({
    minimum: 200,
    maximum: 60000,
    default: 3000,
    description: 'A standby agent that has not claimed its call within this time is replaced by an ordinary dispatch into the same room',
  }),
  TRANSFER_RING_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, maximum: 120, default: 30, description: "A warm transfer's second leg not answered within this time: the agent tells the caller (no_answer)" }),
  INBOUND_FALLBACK_OVERFLOW_PERCENT: Type.Integer({
    minimum: 0,
    maximum: 1000,
    default: 50,
    description: "A number's fallback (the overflow line) takes calls past the org's max_concurrent_calls and max_calls_per_day by at most this share of each (at least one call)",
  }),
  BLIND_TRANSFER_RESERVED_MINUTES: Type.Integer({
    minimum: 1,
    maximum: 1440,
    default: 30,
    description: "A blind transfer's leg leaves the platform's sight once the carrier accepts the REFER: it is priced (and counted against daily_spend_cap_cents) as this many minutes at the destination's outbound rate",
  }),
  OUTBOUND_SCHEDULE_HORIZON_DAYS: Type.Integer({ minimum: 1, maximum: 365, default: 30, description: 'How far ahead scheduled_at may be' }),
  OUTBOUND_CONCURRENCY_WAIT_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 86400,
    default: 600,
    description: 'A scheduled call that comes due while the org is at max_concurrent_calls waits for a free slot this long past its time, then fails with concurrency_limit',
  }),
  OUTBOUND_AGENT_WAIT_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 120,
    default: 10,
    description: 'Before placing an outbound call, wait up to this long for the agent to join its room (so the callee is heard from the answer); 0 dials at once',
  }),
  OUTBOUND_DIAL_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Outbound calls one control-plane process dials (rings) at once' }),
  STOP_REPORT_GRACE_SECONDS: Type.Integer({ minimum: 1, maximum: 600, default: 20, description: "After a stop, how long the worker's conversation report is awaited before transcript.final and the analysis go ahead without it" }),
  SIMULATED_CARRIER_ROUTES: Type.String({ default: '', description: 'Simulated carrier, outbound: comma-separated "<E.164 prefix or *>=host:port" SIP targets (e.g. "+1555*=127.0.0.1:5090"); other destinations fail like a real carrier' }),
  SIMULATED_CARRIER_NO_ANSWER_SECONDS: Type.Integer({ minimum: 1, maximum: 120, default: 5, description: 'Simulated carrier: a routed destination that sends nothing back within this time fails with 480 (no_answer)' }),
};
// ---- end of outbound calls

// ---- Campaigns (modules/campaigns: uploads, the scheduler)
const CampaignEnv = {
  CAMPAIGN_MAX_CONTACTS: Type.Integer({ minimum: 1, maximum: 1000000, default: 10000, description: 'Contacts (rows) of one campaign; more is a 422 naming the rows over' }),
  CAMPAIGN_UPLOAD_MAX_BYTES: Type.Integer({ minimum: 1024, default: 5242880, description: 'Largest campaign creation: the CSV file, or the JSON body (413 above)' }),
  DNC_UNVERIFIED_PER_DAY: Type.Integer({
    minimum: 0,
    maximum: 100000,
    default: 50,
    description: "Numbers inbound callers may put on an organisation's do-not-call list per UTC day (their caller IDs, which callers can set); past it the tool's request is refused (409)",
  }),
  CAMPAIGN_MAX_ACTIVE_PER_ORG: Type.Integer({
    minimum: 1,
    maximum: 10000,
    default: 50,
    description: 'Campaigns one organisation may have scheduled, running or paused at once; one more is a 409 (reason campaign_limit)',
  }),
  CAMPAIGN_MAX_CALLS_PER_MINUTE: Type.Integer({ minimum: 1, maximum: 60000, default: 600, description: 'Highest pacing.calls_per_minute a campaign may ask for' }),
  CAMPAIGN_TICK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 100, default: 4, description: 'Campaigns one control-plane process schedules at once' }),
};
// ---- end of campaigns

const Env = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], { default: 'development' }),
  HOST: Type.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
  METRICS_HOST: Type.String({ default: '127.0.0.1' }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 500, default: 10 }),
  DATA_DIR: Type.String({ default: '.data' }),
  EMBEDDED_PG_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 5488 }),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  BODY_LIMIT: Type.String({ default: '1mb' }),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  JWT_JWKS_URL: Type.Optional(Type.String({ format: 'uri' })),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  MASTER_KEY: Type.Optional(Type.String({ minLength: 1 })),
  MASTER_KEY_VERSION: Type.Integer({ minimum: 1, default: 1 }),
  MASTER_KEYS_PREVIOUS: Type.Optional(Type.String({ minLength: 1 })),
  RATE_LIMIT_PER_SECOND: Type.Number({ minimum: 0, default: 50 }),
  RATE_LIMIT_BURST: Type.Integer({ minimum: 1, default: 200 }),
  RATE_LIMIT_SYNC_MS: Type.Integer({ minimum: 10, maximum: 10000, default: 100, description: 'How often each replica merges its rate-limit buckets with the shared ones in PostgreSQL' }),
  AUTH_CACHE_TTL_SECONDS: Type.Integer({ minimum: 0, default: 60 }),
  // ---- Abuse limits: per organisation, failed authentication per client IP, publishable keys' web calls
  RATE_LIMIT_ORG_PER_SECOND: Type.Number({ minimum: 0, default: 100, description: 'Requests per second of one organisation, all its credentials together (0: no per-organisation limit)' }),
  RATE_LIMIT_ORG_BURST: Type.Integer({ minimum: 1, default: 400, description: 'Burst of the per-organisation bucket' }),
  AUTH_FAILURES_PER_MINUTE_PER_IP: Type.Integer({
    minimum: 0,
    default: 30,
    description: 'Failed authentications (401) one client IP may make per minute (and in a burst); past it every request from that IP answers 429 until the bucket refills (0: off)',
  }),
  TRUST_PROXY: Type.Integer({
    minimum: 0,
    maximum: 10,
    default: 0,
    description: 'Reverse proxies in front of the API that append the client address to X-Forwarded-For; the client IP is the entry this many from the right. 0: the TCP peer address, X-Forwarded-For ignored',
  }),
  PUBLISHABLE_WEB_CALL_CONCURRENCY: Type.Integer({
    minimum: 0,
    default: 5,
    description: "Live web calls one organisation may have started with publishable keys (0: no own limit); such calls are never counted against max_concurrent_calls for phone calls",
  }),
  PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP: Type.Integer({ minimum: 0, default: 3, description: 'Web calls one client IP may start per minute (and in a burst) with the publishable keys of one organisation (0: no limit)' }),
  // ---- end abuse limits
  WORKER_TOKEN: Type.Optional(Type.String({ minLength: 32, description: 'Credential of the media workers on the internal API' })),
  WORKER_CAPABILITY_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 172800, default: 21600, description: "How long a call's worker capability (in its dispatch) stays valid: the longest call (4 h) plus the ended report and the recording upload" }),
  WORKER_RATE_LIMIT_PER_SECOND: Type.Number({ minimum: 0, default: 100, description: 'Internal API requests per second per media worker id (a bucket apart from customer keys); 0 turns it off' }),
  WORKER_RATE_LIMIT_BURST: Type.Integer({ minimum: 1, default: 500 }),
  LIVEKIT_URL: Type.String({ default: 'http://127.0.0.1:7880', description: 'LiveKit server API URL (http or ws)' }),
  LIVEKIT_PUBLIC_URL: Type.Optional(Type.String({ description: 'WebSocket URL that browsers use; defaults to LIVEKIT_URL as ws(s)' })),
  LIVEKIT_API_KEY: Type.String({ default: 'devkey' }),
  LIVEKIT_API_SECRET: Type.String({ default: 'secret' }),
  AGENT_NAME: Type.String({ default: 'vap-agent', description: 'agentName the media workers register under' }),
  CALL_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 30, maximum: 86400, default: 600 }),
  LISTEN_TOKEN_TTL_SECONDS: Type.Integer({
    minimum: 10,
    maximum: 3600,
    default: 60,
    description: 'How long a supervisor\'s listen token (POST /v1/calls/{id}/listen) can join the room; a listener already in stays',
  }),
  LISTEN_STREAMS_PER_ORG: Type.Integer({ minimum: 1, default: 5, description: "Listen streams (POST /v1/calls/{id}/listen's stream_url) one organisation may have open at once on one control-plane process" }),
  LISTEN_STREAMS_PER_PROCESS: Type.Integer({ minimum: 1, default: 50, description: 'Listen streams one control-plane process serves at once, all organisations together' }),
  LISTEN_STREAM_MAX_SECONDS: Type.Integer({ minimum: 10, maximum: 86400, default: 14400, description: 'The longest a listen stream stays open (then it ends with reason time_limit)' }),
  TAKEOVER_TOKEN_TTL_SECONDS: Type.Integer({
    minimum: 10,
    maximum: 3600,
    default: 60,
    description: "How long a supervisor's takeover token (POST /v1/calls/{id}/control, `takeover`) can join the room; a person already in stays until `hand_back`",
  }),
  RECORDINGS_DIR: Type.Optional(Type.String()),
  WEB_DIST_DIR: Type.Optional(Type.String({ description: 'Folder of the built browser files the playground serves (npm run build:web); defaults to web/dist in the repository' })),
  RECORDING_URL_TTL_SECONDS: Type.Integer({ minimum: 60, default: 14400 }),
  S3_ENDPOINT: Type.Optional(Type.String()),
  S3_BUCKET: Type.Optional(Type.String()),
  S3_REGION: Type.String({ default: 'us-east-1' }),
  S3_ACCESS_KEY_ID: Type.Optional(Type.String()),
  S3_SECRET_ACCESS_KEY: Type.Optional(Type.String()),
  // post-call analysis (control-plane/src/modules/calls/analysis.ts)
  ANALYSIS_MODE: Type.Union([Type.Literal('agent'), Type.Literal('model'), Type.Literal('extractive'), Type.Literal('off')], {
    default: 'agent',
    description: "agent: the agent's own provider and model; model: always ANALYSIS_PROVIDER/ANALYSIS_MODEL; extractive: offline summary, no model; off: none",
  }),
  ANALYSIS_PROVIDER: Type.Union([Type.Literal('openai'), Type.Literal('anthropic'), Type.Literal('gemini')], { default: 'openai' }),
  ANALYSIS_MODEL: Type.String({ default: 'gpt-4o-mini', description: "The configured analysis model (ANALYSIS_MODE=model, or when the agent's provider has no key)" }),
  ANTHROPIC_API_KEY: Type.Optional(Type.String()),
  GOOGLE_API_KEY: Type.Optional(Type.String()),
  GEMINI_API_KEY: Type.Optional(Type.String()),
  OPENAI_BASE_URL: Type.Optional(Type.String()),
  ANTHROPIC_BASE_URL: Type.Optional(Type.String()),
  GEMINI_BASE_URL: Type.Optional(Type.String()),
  ANALYSIS_BASE_URL: Type.Optional(Type.String()),
  // The speech providers' API, moved as on the workers (a gateway, a test double): a voice-mode agent test's
  // simulated caller speaks and listens through them with the org's keys (agent-tests/caller-speech.ts).
  DEEPGRAM_BASE_URL: Type.Optional(Type.String()),
  ELEVENLABS_BASE_URL: Type.Optional(Type.String()),
  CARTESIA_BASE_URL: Type.Optional(Type.String()),
  OPENAI_API_KEY: Type.Optional(Type.String()),
  // The workers' other platform settings, read here only to say which agents can run (`warnings` on agents and
  // models, modules/agents/warnings.ts) and, for the local model, where the analysis and text-mode tests reach it.
  DEEPGRAM_API_KEY: Type.Optional(Type.String()),
  ELEVEN_API_KEY: Type.Optional(Type.String()),
  ELEVENLABS_API_KEY: Type.Optional(Type.String()),
  CARTESIA_API_KEY: Type.Optional(Type.String()),
  LOCAL_LLM_BASE_URL: Type.Optional(Type.String({ format: 'uri', description: "The platform's local OpenAI-compatible server (Ollama, a llama.cpp server): models of provider `local`" })),
  LLM_MODEL_PATH: Type.Optional(Type.String({ description: "A GGUF file on the workers: models of provider `local` run it (it wins over LOCAL_LLM_BASE_URL)" })),
  ANALYSIS_RETRY_LIMIT: Type.Integer({ minimum: 0, maximum: 20, default: 4 }),
  ANALYSIS_RETRY_DELAY_SECONDS: Type.Integer({ minimum: 1, default: 5 }),
  CALL_ENDED_ANALYSIS_WAIT_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 300,
    default: 10,
    description:
      'How long call.ended waits for the post-call analysis so that it carries outcome, ai_summary and analysis (transcript.final waits behind it); past this it goes with what is known, and call.analyzed follows. 0: no wait',
  }),
  WORKER_SILENCE_SECONDS: Type.Integer({ minimum: 5, default: 90, description: 'An in-progress call whose worker has not reported for this long, and whose room is gone, is reaped' }),
  DISPATCH_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, default: 60 }),
  // Code health: the reaper's wait after LiveKit says the agent left a room (it may rejoin); tests shorten it.
  REAP_DELAY_SECONDS: Type.Integer({ minimum: 0, maximum: 300, default: 10, description: 'Seconds between LiveKit reporting that the agent left a call\'s room and the check that ends the call with worker_lost' }),
  JOBS_ENABLED: Type.Boolean({ default: true }),
  // ---- Agent tests (modules/agent-tests) ----
  AGENT_TEST_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 4,
    description: "Test conversations one organisation runs at once, across its runs (never more than its max_concurrent_calls); the rest of a run waits its turn",
  }),
  AGENT_TEST_RUNS_PER_ORG: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 2,
    description: "Test runs of one organisation worked on at once across all processes (pg-boss group concurrency): one organisation's queued runs cannot take every process's run slots",
  }),
  AGENT_TEST_WAIT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 3600,
    default: 5,
    description: "A run that can start no conversation (its organisation is at its conversation or call limit) gives its job slot back and is asked again this much later",
  }),
  AGENT_TEST_PLATFORM_DAILY_CONVERSATIONS: Type.Integer({
    minimum: 0,
    default: 200,
    description: "Test conversations per organisation and UTC day that may use the platform's provider keys or local model (agent model or judge, or any voice-mode conversation); 0: tests run on the organisation's own keys only",
  }),
  AGENT_TEST_JOBS_PER_PROCESS: Type.Integer({ minimum: 1, maximum: 100, default: 4, description: 'Test runs one control-plane process works on at once' }),
  JOBS_SUPERVISE_INTERVAL_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 60, description: 'How often pg-boss looks for jobs whose process died (missed heartbeats) or that expired, and retries them: the longest a dial, delivery or ingestion waits for another process after a crash' }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 15000 }),
  SSRF_ALLOWLIST: Type.Optional(Type.String({ description: 'URL hosts that may be private, e.g. "127.0.0.1,::1,localhost" (tests and local development only)' })),
  LLM_PRIVATE_HOSTS: Type.Optional(
    Type.String({ description: 'Private hosts a model base_url may reach (self-hosted LLMs on the LAN): host names, addresses and CIDR ranges, e.g. "gpu-box,10.20.0.0/16"' }),
  ),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60000, default: 10000 }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({ default: '5s,5m,30m,2h,5h,10h,10h', description: 'Delays before each retry (ms, s, m, h suffixes)' }),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 50 }),
  WEBHOOK_ENDPOINT_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  WEBHOOK_DISABLE_AFTER_HOURS: Type.Number({ minimum: 0, default: 120 }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 100, default: 5000 }),
  WEBHOOK_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  // ---- Phone numbers and inbound calls (modules/phone-numbers) ----
  SIP_INGRESS_ADDRESS: Type.String({ default: '127.0.0.1:5060', description: 'host:port of the SIP bridge, where the carrier sends calls for our numbers' }),
  SIP_INGRESS_TRANSPORT: Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')], { default: 'udp' }),
  INBOUND_WATCH_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 8,
    description: "Unanswered-inbound checks one process runs at once: a voicemail message being played to one caller (up to minutes) holds one, so others' unanswered calls are not delayed behind it",
  }),
  INBOUND_ANSWER_WAIT_SECONDS: Type.Integer({ minimum: 1, maximum: 60, default: 5, description: "How long an inbound call's dispatch may go untaken by any worker before the number's fallback agent is tried" }),
  INBOUND_FALLBACK_WAIT_SECONDS: Type.Integer({ minimum: 1, maximum: 60, default: 5, description: "How long the fallback agent's dispatch may go untaken before the number's voicemail_message is played and the call fails (agent_unavailable)" }),
  SIP_RINGING_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, maximum: 120, default: 30, description: 'An inbound call no agent picks up within this time is refused (SIP 486)' }),
  SIMULATED_CARRIER_SOURCE_ADDRESSES: Type.String({ default: '127.0.0.0/8,::1', description: 'Comma-separated IPs/CIDRs calls to simulated numbers may come from' }),
  SIMULATED_CARRIER_TERMINATION_ADDRESS: Type.String({ default: '127.0.0.1:5080', description: 'host:port that plays the simulated carrier for outbound calls' }),
  SIMULATED_CARRIER_INBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 1, description: 'Per-minute rate of simulated inbound calls' }),
  SIMULATED_CARRIER_OUTBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 2, description: 'Per-minute rate of simulated outbound calls' }),
  PHONE_WIRING_STALE_SECONDS: Type.Integer({ minimum: 10, default: 120, description: 'A purchase or release unfinished for this long is undone by the repair job' }),
  // ---- end phone numbers ----
  ...CarrierEnv,
  // readiness (GET /health/ready)
  READY_REQUIRED_CHECKS: Type.String({
    pattern: '^((database|jobs|livekit|workers)(,(database|jobs|livekit|workers))*)?$',
    default: 'database,jobs',
    description: 'Checks whose failure makes /health/ready answer 503 (database, jobs, livekit, workers); the others are reported only',
  }),
  READY_CHECK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60000, default: 2000 }),
  READY_CACHE_MS: Type.Integer({ minimum: 0, maximum: 60000, default: 1000, description: 'How long one round of readiness checks answers /health/ready (requests in between share it)' }),
  WORKER_HEARTBEAT_FRESH_SECONDS: Type.Integer({ minimum: 5, default: 30, description: 'A media worker counts as registered while its last heartbeat is this recent' }),
  // ---- Knowledge bases (ingestion limits, retrieval) ----
  KB_MAX_FILE_BYTES: Type.Integer({ minimum: 1024, default: 10485760, description: 'Largest uploaded file of a knowledge source (413 above)' }),
  KB_MAX_TEXT_BYTES: Type.Integer({ minimum: 1024, default: 2097152, description: 'Largest inline text of a knowledge source (413 above)' }),
  KB_CRAWL_MAX_PAGES: Type.Integer({ minimum: 1, maximum: 10000, default: 50, description: 'Pages fetched per url source' }),
  KB_CRAWL_MAX_DEPTH: Type.Integer({ minimum: 0, maximum: 10, default: 2, description: 'Link hops from the submitted URL (sitemap URLs count as depth 1)' }),
  KB_CRAWL_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 120000, default: 10000, description: 'Per request of the crawler' }),
  KB_CRAWL_MAX_PAGE_BYTES: Type.Integer({ minimum: 1024, default: 2097152, description: 'Larger pages are not used' }),
  KB_CRAWL_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 16, default: 2, description: 'Parallel requests to the crawled site' }),
  KB_CRAWL_DEADLINE_MS: Type.Integer({ minimum: 1000, default: 300000, description: 'Time budget of one crawl' }),
  KB_CRAWL_MAX_URLS: Type.Integer({ minimum: 1, maximum: 1000000, default: 5000, description: 'URLs one crawl may discover (sitemaps and links); discovery stops there' }),
  // Parsing of uploaded documents runs in a child process per document (parse-sandbox.ts) under these caps.
  KB_PARSE_MAX_MEMORY_MB: Type.Integer({ minimum: 64, maximum: 65536, default: 512, description: 'Heap and resident memory of one document\'s parsing process; above it the process is killed and the source fails' }),
  KB_PARSE_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 120000, description: 'Wall-clock time of one document\'s parsing' }),
  KB_MAX_UNZIPPED_BYTES: Type.Integer({ minimum: 1024, default: 209715200, description: 'A DOCX whose ZIP directory declares more than this, all entries together, is refused unread' }),
  KB_MAX_ZIP_ENTRIES: Type.Integer({ minimum: 1, maximum: 65534, default: 10000, description: 'Entries of a DOCX archive' }),
  KB_MAX_PDF_PAGES: Type.Integer({ minimum: 1, default: 2000, description: 'Pages of a PDF (checked before any page is read)' }),
  KB_MAX_CSV_RECORD_BYTES: Type.Integer({ minimum: 1024, default: 131072, description: 'Characters of one CSV record, the header included' }),
  KB_MAX_EXTRACTED_CHARS: Type.Integer({ minimum: 1000, default: 5000000, description: 'Characters of text extracted from one document' }),
  KB_JOB_RETRY_LIMIT: Type.Integer({ minimum: 0, maximum: 20, default: 3 }),
  KB_JOB_RETRY_DELAY_SECONDS: Type.Integer({ minimum: 1, default: 10 }),
  KB_STUFF_MAX_TOKENS: Type.Integer({ minimum: 0, default: 8000, description: 'A call stuffs its bases into the prompt only up to this many tokens; above it they are searched per turn' }),
  KB_RETRIEVAL_MAX_TOKENS: Type.Integer({ minimum: 50, default: 1500, description: 'Knowledge tokens added to one turn in retrieval mode' }),
  KB_EMBEDDINGS_BASE_URL: Type.Optional(Type.String({ description: 'OpenAI-compatible embeddings API; with pgvector in the database, retrieval becomes hybrid (vector + full text, RRF)' })),
  KB_EMBEDDINGS_MODEL: Type.String({ default: 'text-embedding-3-small' }),
  KB_EMBEDDINGS_API_KEY: Type.Optional(Type.String()),
  KB_EMBEDDINGS_DIMENSIONS: Type.Integer({ minimum: 1, maximum: 4000, default: 1536 }),
  ...OutboundEnv,
  ...CampaignEnv,
});
export type Config = Static<typeof Env>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true, strict: false });
ajv.addFormat('uri', (v: string) => URL.canParse(v));
const check = ajv.compile(Env);

/** Reads and validates configuration. Empty strings count as unset, as shells tend to export them. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const v = env[key];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  Object.assign(raw, overrides);
  if (!check(raw)) {
    const lines = (check.errors ?? []).map((e) => `  ${e.instancePath.slice(1) || '(env)'}: ${e.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const config = raw as Config;
  try {
    parsePrivateHosts(config.LLM_PRIVATE_HOSTS);
  } catch (err) {
    throw new ConfigError(`invalid configuration:\n  ${(err as Error).message}`);
  }
  const carrierErrors = carrierConfigErrors(config);
  if (carrierErrors.length) throw new ConfigError(`invalid configuration:\n${carrierErrors.map((e) => `  ${e}`).join('\n')}`);
  if (config.NODE_ENV === 'production') {
    const missing = (['MASTER_KEY', 'PUBLIC_BASE_URL'] as const).filter((k) => !config[k]);
    if (missing.length) throw new ConfigError(`invalid configuration: ${missing.join(', ')} must be set in production`);
    const devLivekit = devLivekitCredentialsError(config.NODE_ENV, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET);
    if (devLivekit) throw new ConfigError(`invalid configuration: ${devLivekit}`);
  }
  return config;
}
