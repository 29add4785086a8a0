// The shapes the calls pages read from /v1: a list page, a call and its messages.
export interface List<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
}
export interface Message {
  role: 'agent' | 'user';
  content: string;
  started_at?: string;
  ended_at?: string;
  interrupted?: boolean;
  tool_call?: { name: string; arguments: string; output: string; is_error: boolean };
  /** An agent reply's turn, as the worker measured it (null: not measured in that turn). */
  metrics?: { eou_delay_ms: number | null; llm_ttft_ms: number | null; tts_ttfb_ms: number | null; e2e_ms: number | null };
}
export type Stat = { avg_ms: number; p50_ms: number; min_ms: number; max_ms: number; samples: number };
export interface Call {
  id: string;
  agent_id: string;
  agent_version?: number | null;
  agent_version_source?: string | null;
  type: string;
  status: string;
  to_number: string | null;
  from_number: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_seconds: number | null;
  end_reason: string | null;
  /** Why the call failed, when it did and the platform knows. */
  error?: { code: string; message: string } | null;
  outcome: string | null;
  recording_url: string | null;
  messages: Message[] | null;
  ai_summary: string | null;
  analysis: { outcome: string | null; summary: string | null; status: string; error: string | null; method: string | null; model?: string | null };
  /** Null until the call has ended (not yet measured). */
  latency: Record<string, Stat | undefined> | null;
  created_at: string;
}
