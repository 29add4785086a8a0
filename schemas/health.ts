import { Type, StringEnum } from './common.ts';

export const Health = Type.Object({ status: StringEnum(['ok'] as const) }, { title: 'Health', examples: [{ status: 'ok' }] });

const Check = Type.Object({
  status: StringEnum(['ok', 'error', 'disabled'] as const),
  required: Type.Boolean({ description: 'Whether a failure of this check makes the answer 503 (READY_REQUIRED_CHECKS)' }),
  latency_ms: Type.Optional(Type.Number()),
  error: Type.Optional(Type.String()),
  workers: Type.Optional(Type.Integer({ minimum: 0, description: 'Media workers registered (workers check only)' })),
});

export const Readiness = Type.Object(
  {
    status: StringEnum(['ok', 'error'] as const),
    checks: Type.Object({ database: Check, jobs: Check, livekit: Check, workers: Check }),
  },
  {
    title: 'Readiness',
    examples: [
      {
        status: 'ok',
        checks: {
          database: { status: 'ok', required: true, latency_ms: 0.4 },
          jobs: { status: 'ok', required: true, latency_ms: 1.2 },
          livekit: { status: 'ok', required: true, latency_ms: 2.1 },
          workers: { status: 'ok', required: true, latency_ms: 0.6, workers: 2 },
        },
      },
    ],
  },
);
