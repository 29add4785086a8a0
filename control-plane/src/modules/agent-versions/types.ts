// The shape of a version's snapshot (snapshot.ts builds and compares them; queries.ts stores them).
import type { AgentWrite } from '../agents/queries.ts';
import type { LlmProvider, RealtimeSettings } from '../../../../schemas/models.ts';

export interface ModelSnapshot {
  id: string;
  name: string;
  provider: LlmProvider;
  model: string;
  base_url: string | null;
  system_prompt: string | null;
  temperature: number;
  max_tokens: number | null;
  /** A realtime model's settings; absent from snapshots made before realtime models. */
  realtime?: RealtimeSettings | null;
}

export interface ToolSnapshot {
  id: string;
  type: string;
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  url: string | null;
  method: string | null;
  timeout_ms: number | null;
  destination: string | null;
  transfer_mode: string | null;
}

export interface Snapshot {
  agent: AgentWrite;
  model: ModelSnapshot;
  tools: ToolSnapshot[];
  knowledge_bases: { id: string; name: string }[];
}
