// Configuration from the environment, validated once at start-up with messages that name the variable.
import { Ajv } from 'ajv';
import { Type, type Static } from '@sinclair/typebox';

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
  AUTH_CACHE_TTL_SECONDS: Type.Integer({ minimum: 0, default: 60 }),
  WORKER_TOKEN: Type.Optional(Type.String({ minLength: 32, description: 'Credential of the media workers on the internal API' })),
  LIVEKIT_URL: Type.String({ default: 'http://127.0.0.1:7880', description: 'LiveKit server API URL (http or ws)' }),
  LIVEKIT_PUBLIC_URL: Type.Optional(Type.String({ description: 'WebSocket URL that browsers use; defaults to LIVEKIT_URL as ws(s)' })),
  LIVEKIT_API_KEY: Type.String({ default: 'devkey' }),
  LIVEKIT_API_SECRET: Type.String({ default: 'secret' }),
  AGENT_NAME: Type.String({ default: 'vap-agent', description: 'agentName the media workers register under' }),
  CALL_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 30, maximum: 86400, default: 600 }),
  RECORDINGS_DIR: Type.Optional(Type.String()),
  RECORDING_URL_TTL_SECONDS: Type.Integer({ minimum: 60, default: 14400 }),
  S3_ENDPOINT: Type.Optional(Type.String()),
  S3_BUCKET: Type.Optional(Type.String()),
  S3_REGION: Type.String({ default: 'us-east-1' }),
  S3_ACCESS_KEY_ID: Type.Optional(Type.String()),
  S3_SECRET_ACCESS_KEY: Type.Optional(Type.String()),
  ANALYSIS_MODEL: Type.String({ default: 'gpt-4o-mini', description: 'Post-call analysis model when the agent model is not OpenAI-compatible' }),
  ANALYSIS_BASE_URL: Type.Optional(Type.String()),
  OPENAI_API_KEY: Type.Optional(Type.String()),
  ANALYSIS_RETRY_LIMIT: Type.Integer({ minimum: 0, maximum: 20, default: 4 }),
  ANALYSIS_RETRY_DELAY_SECONDS: Type.Integer({ minimum: 1, default: 5 }),
  WORKER_SILENCE_SECONDS: Type.Integer({ minimum: 5, default: 90, description: 'An in-progress call whose worker has not reported for this long, and whose room is gone, is reaped' }),
  DISPATCH_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, default: 60 }),
  JOBS_ENABLED: Type.Boolean({ default: true }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 15000 }),
  SSRF_ALLOWLIST: Type.Optional(Type.String({ description: 'URL hosts that may be private, e.g. "127.0.0.1,::1,localhost" (tests and local development only)' })),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60000, default: 10000 }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({ default: '5s,5m,30m,2h,5h,10h,10h', description: 'Delays before each retry (ms, s, m, h suffixes)' }),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 50 }),
  WEBHOOK_ENDPOINT_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  WEBHOOK_DISABLE_AFTER_HOURS: Type.Number({ minimum: 0, default: 120 }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 100, default: 5000 }),
  WEBHOOK_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  // ---- Phone numbers and inbound calls (modules/phone-numbers) ----
  CARRIER: Type.Union([Type.Literal('simulated'), Type.Literal('twilio'), Type.Literal('telnyx')], { default: 'simulated', description: 'Where numbers are bought' }),
  SIP_INGRESS_ADDRESS: Type.String({ default: '127.0.0.1:5060', description: 'host:port of the SIP bridge, where the carrier sends calls for our numbers' }),
  SIP_INGRESS_TRANSPORT: Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')], { default: 'udp' }),
  SIP_RINGING_TIMEOUT_SECONDS: Type.Integer({ minimum: 5, maximum: 120, default: 30, description: 'An inbound call no agent picks up within this time is refused (SIP 486)' }),
  SIMULATED_CARRIER_SOURCE_ADDRESSES: Type.String({ default: '127.0.0.0/8,::1', description: 'Comma-separated IPs/CIDRs calls to simulated numbers may come from' }),
  SIMULATED_CARRIER_TERMINATION_ADDRESS: Type.String({ default: '127.0.0.1:5080', description: 'host:port that plays the simulated carrier for outbound calls' }),
  SIMULATED_CARRIER_INBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 1, description: 'Per-minute rate of simulated inbound calls' }),
  SIMULATED_CARRIER_OUTBOUND_RATE_CENTS: Type.Number({ minimum: 0, default: 2, description: 'Per-minute rate of simulated outbound calls' }),
  PHONE_WIRING_STALE_SECONDS: Type.Integer({ minimum: 10, default: 120, description: 'A purchase or release unfinished for this long is undone by the repair job' }),
  // ---- end phone numbers ----
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
  if (config.NODE_ENV === 'production') {
    const missing = (['MASTER_KEY', 'PUBLIC_BASE_URL'] as const).filter((k) => !config[k]);
    if (missing.length) throw new ConfigError(`invalid configuration: ${missing.join(', ')} must be set in production`);
  }
  return config;
}
