// Exactly the spec's resource groups, in its order.
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
] as const;
export type Tag = (typeof TAGS)[number];
