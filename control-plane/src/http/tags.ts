// The spec's resource groups, in its order, then the platform's own additions (agent tests, squads).
export const TAGS = [
  'health',
  'integrations',
  'llm-models',
  'tools',
  'knowledge-bases',
  'voices',
  'webhooks',
  'agents',
  'phone-numbers',
  'calls',
  'workspace',
  'usage',
  'audit-events',
  'activity',
  'agent-tests',
  'squads',
] as const;
export type Tag = (typeof TAGS)[number];
