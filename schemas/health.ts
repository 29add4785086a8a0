import { Type, StringEnum } from './common.ts';

export const Health = Type.Object({ status: StringEnum(['ok'] as const) }, { title: 'Health', examples: [{ status: 'ok' }] });

const Check = Type.Object({ status: StringEnum(['ok', 'error', 'disabled'] as const), latency_ms: Type.Optional(Type.Number()), error: Type.Optional(Type.String()) });

export const Readiness = Type.Object(
  {
    status: StringEnum(['ok', 'error'] as const),
    checks: Type.Object({ database: Check, jobs: Check }),
  },
  { title: 'Readiness', examples: [{ status: 'ok', checks: { database: { status: 'ok', latency_ms: 0.4 }, jobs: { status: 'ok', latency_ms: 1.2 } } }] },
);
