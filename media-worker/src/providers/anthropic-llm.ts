// Anthropic's Messages API behind the agents LLM interface, on the official SDK: streamed text and tool
// calls, the chat context mapped to Anthropic's shape (system prompt apart, tool results as user turns),
// and SDK errors mapped to the agents error classes so the base stream retries only what can succeed.
import Anthropic from '@anthropic-ai/sdk';
import {
  type APIConnectOptions,
  APIConnectionError,
  APIError,
  APIStatusError,
  APITimeoutError,
  DEFAULT_API_CONNECT_OPTIONS,
  llm,
  toError,
} from '@livekit/agents';

type MessageParam = Anthropic.MessageParam;
type ContentBlock = Anthropic.ContentBlockParam;

export interface AnthropicLLMOptions {
  model: string;
  apiKey?: string;
  /** Another host speaking the same API (a gateway, or a test double). */
  baseURL?: string;
  /** The HTTP client (the model egress guard's fetch, shared/model-egress.ts). */
  fetch?: typeof fetch;
  /** The base URL is a tenant's: nothing from the platform's environment (ANTHROPIC_AUTH_TOKEN) goes there. */
  tenant?: boolean;
  temperature?: number;
  /** Anthropic requires a limit on the reply. */
  maxTokens: number;
  toolChoice?: llm.ToolChoice;
  parallelToolCalls?: boolean;
  client?: Anthropic;
}

const defaultOptions: AnthropicLLMOptions = {
  model: 'claude-sonnet-4-5',
  apiKey: process.env.ANTHROPIC_API_KEY,
  maxTokens: 1024,
};

/** Stands in for the opening user turn when a conversation starts with the agent speaking. */
export const CONVERSATION_START = '(The call has started.)';

export class AnthropicLLM extends llm.LLM {
  #opts: AnthropicLLMOptions;
  #client: Anthropic;

  constructor(opts: Partial<AnthropicLLMOptions> = {}) {
    super();
    this.#opts = { ...defaultOptions, ...opts };
    if (!this.#opts.apiKey && !this.#opts.client) {
      throw new Error('Anthropic API key is required, whether as an argument or as $ANTHROPIC_API_KEY');
    }
    this.#client =
      this.#opts.client ??
      new Anthropic({
        apiKey: this.#opts.apiKey,
        ...(this.#opts.baseURL ? { baseURL: this.#opts.baseURL } : {}),
        ...(this.#opts.fetch ? { fetch: this.#opts.fetch } : {}),
        ...(this.#opts.tenant ? { authToken: null } : {}),
        // Retries belong to the agents stream (one layer only).
        maxRetries: 0,
      });
  }

  label(): string {
    return 'anthropic.LLM';
  }

  override get model(): string {
    return this.#opts.model;
  }

  override get provider(): string {
    return 'anthropic';
  }

  chat({
    chatCtx,
    toolCtx,
    connOptions = DEFAULT_API_CONNECT_OPTIONS,
    parallelToolCalls,
    toolChoice,
  }: {
    chatCtx: llm.ChatContext;
    toolCtx?: llm.ToolContextLike;
    connOptions?: APIConnectOptions;
    parallelToolCalls?: boolean;
    toolChoice?: llm.ToolChoice;
    extraKwargs?: Record<string, unknown>;
  }): AnthropicLLMStream {
    return new AnthropicLLMStream(this, {
      client: this.#client,
      opts: {
        ...this.#opts,
        toolChoice: toolChoice ?? this.#opts.toolChoice,
        parallelToolCalls: parallelToolCalls ?? this.#opts.parallelToolCalls,
      },
      chatCtx,
      toolCtx,
      connOptions,
    });
  }
}

// ---- Chat context -> Messages API ------------------------------------------------------------------------

async function imageBlock(content: llm.ImageContent): Promise<ContentBlock> {
  const image = await llm.serializeImage(content);
  if (image.externalUrl) return { type: 'image', source: { type: 'url', url: image.externalUrl } };
  if (!image.base64Data) throw new Error('image has no data');
  return {
    type: 'image',
    source: { type: 'base64', media_type: (image.mimeType ?? 'image/jpeg') as 'image/jpeg', data: image.base64Data },
  };
}

function parseArgs(args: string): Record<string, unknown> {
  try {
    const value = JSON.parse(args || '{}') as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Maps a chat context to Anthropic's `system` and `messages`:
 * - system and developer messages, wherever they are, join the top-level system prompt in order;
 * - function calls become `tool_use` blocks of the assistant turn, their outputs `tool_result` blocks of the
 *   next user turn (a call without an output, or the reverse, is dropped: the API rejects either);
 * - consecutive turns of one role are merged, and a conversation that opens with the agent gets a stand-in
 *   user turn, because the API wants the user first.
 */
export async function toAnthropicMessages(chatCtx: llm.ChatContext): Promise<{ system: string; messages: MessageParam[] }> {
  const system: string[] = [];
  const messages: MessageParam[] = [];
  const calls = new Set<string>();
  const outputs = new Set<string>();
  for (const item of chatCtx.items) {
    if (item.type === 'function_call') calls.add(item.callId);
    if (item.type === 'function_call_output') outputs.add(item.callId);
  }

  const append = (role: 'user' | 'assistant', blocks: ContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last && last.role === role) {
      const content = last.content as ContentBlock[];
      // tool_result blocks must open a user turn: put them before the text already there.
      if (role === 'user' && blocks.every((b) => b.type === 'tool_result')) {
        const firstOther = content.findIndex((b) => b.type !== 'tool_result');
        if (firstOther >= 0) {
          content.splice(firstOther, 0, ...blocks);
          return;
        }
      }
      content.push(...blocks);
    } else {
      messages.push({ role, content: [...blocks] });
    }
  };

  for (const item of chatCtx.items) {
    if (item.type === 'message') {
      const texts: string[] = [];
      const images: ContentBlock[] = [];
      for (const content of item.content) {
        if (typeof content === 'string') texts.push(content);
        else if (content.type === 'instructions') texts.push(content.value);
        else if (content.type === 'image_content') images.push(await imageBlock(content));
      }
      const text = texts.join('\n').trim();
      if (item.role === 'system' || item.role === 'developer') {
        if (text) system.push(text);
        continue;
      }
      const blocks: ContentBlock[] = [...images, ...(text ? [{ type: 'text' as const, text }] : [])];
      append(item.role, blocks);
    } else if (item.type === 'function_call') {
      if (!outputs.has(item.callId)) continue;
      append('assistant', [{ type: 'tool_use', id: item.callId, name: item.name, input: parseArgs(item.args) }]);
    } else if (item.type === 'function_call_output') {
      if (!calls.has(item.callId)) continue;
      append('user', [{ type: 'tool_result', tool_use_id: item.callId, content: item.output, is_error: item.isError }]);
    }
  }

  if (messages[0]?.role !== 'user') messages.unshift({ role: 'user', content: [{ type: 'text', text: CONVERSATION_START }] });
  return { system: system.join('\n\n'), messages };
}

export function toAnthropicTools(toolCtx: llm.ToolContext | undefined): Anthropic.Tool[] {
  if (!toolCtx) return [];
  return llm.sortedToolEntries(toolCtx).map(([name, tool]) => {
    const { $schema: _drop, ...schema } = llm.toJsonSchema(tool.parameters, false) as Record<string, unknown>;
    return {
      name,
      description: tool.description,
      input_schema: { ...schema, type: 'object' },
    };
  });
}

export function toAnthropicToolChoice(
  choice: llm.ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): Anthropic.ToolChoice | undefined {
  const parallel = parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallelToolCalls === false ? { type: 'auto', ...parallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...parallel };
  if (choice === 'required') return { type: 'any', ...parallel };
  return { type: 'tool', name: choice.function.name, ...parallel };
}

// ---- Errors ----------------------------------------------------------------------------------------------

/** Status codes for errors that arrive inside an SSE stream (they carry a type but no HTTP status). */
const STREAM_ERROR_STATUS: Record<string, number> = {
  overloaded_error: 529,
  api_error: 500,
  rate_limit_error: 429,
  timeout_error: 504,
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
};

/** Maps an SDK error; `retryable` is false once part of the reply went out (a retry would repeat it). */
export function toAgentsError(error: unknown, retryable: boolean): APIError {
  if (error instanceof APIError) return error;
  if (error instanceof Anthropic.APIConnectionTimeoutError) {
    return new APITimeoutError({ message: error.message, options: { retryable } });
  }
  if (error instanceof Anthropic.APIConnectionError) {
    return new APIConnectionError({ message: error.message, options: { retryable } });
  }
  if (error instanceof Anthropic.APIError) {
    const status: number = (error.status as number | undefined) ?? (error.type ? STREAM_ERROR_STATUS[error.type] : undefined) ?? -1;
    return new APIStatusError({
      message: error.apiMessage ?? error.message,
      options: {
        statusCode: status,
        body: (error.error as object | undefined) ?? null,
        requestId: error.requestID ?? null,
        retryable,
      },
    });
  }
  return new APIConnectionError({ message: toError(error).message, options: { retryable } });
}

// ---- The stream ------------------------------------------------------------------------------------------

interface ToolUseInProgress {
  id: string;
  name: string;
  json: string;
}

export class AnthropicLLMStream extends llm.LLMStream {
  #client: Anthropic;
  #opts: AnthropicLLMOptions;

  constructor(
    owner: AnthropicLLM,
    {
      client,
      opts,
      chatCtx,
      toolCtx,
      connOptions,
    }: {
      client: Anthropic;
      opts: AnthropicLLMOptions;
      chatCtx: llm.ChatContext;
      toolCtx?: llm.ToolContextLike;
      connOptions: APIConnectOptions;
    },
  ) {
    super(owner, { chatCtx, toolCtx, connOptions });
    this.#client = client;
    this.#opts = opts;
  }

  protected async run(): Promise<void> {
    let retryable = true;
    try {
      const { system, messages } = await toAnthropicMessages(this.chatCtx);
      const tools = toAnthropicTools(this.toolCtx);
      const toolChoice = tools.length ? toAnthropicToolChoice(this.#opts.toolChoice, this.#opts.parallelToolCalls) : undefined;
      const stream = await this.#client.messages.create(
        {
          model: this.#opts.model,
          max_tokens: this.#opts.maxTokens,
          messages,
          ...(system ? { system } : {}),
          ...(tools.length ? { tools } : {}),
          ...(toolChoice ? { tool_choice: toolChoice } : {}),
          ...(this.#opts.temperature !== undefined ? { temperature: this.#opts.temperature } : {}),
          stream: true,
        },
        { signal: this.abortController.signal, timeout: this.connOptions.timeoutMs },
      );

      let id = '';
      const usage = { input: 0, output: 0, cacheRead: 0, cacheCreation: 0 };
      const blocks = new Map<number, ToolUseInProgress>();
      for await (const event of stream) {
        if (this.abortController.signal.aborted) break;
        switch (event.type) {
          case 'message_start':
            id = event.message.id;
            usage.input = event.message.usage.input_tokens ?? 0;
            usage.cacheRead = event.message.usage.cache_read_input_tokens ?? 0;
            usage.cacheCreation = event.message.usage.cache_creation_input_tokens ?? 0;
            usage.output = event.message.usage.output_tokens ?? 0;
            break;
          case 'content_block_start':
            if (event.content_block.type === 'tool_use') {
              blocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: '' });
            } else if (event.content_block.type === 'text' && event.content_block.text) {
              retryable = false;
              this.queue.put({ id, delta: { role: 'assistant', content: event.content_block.text } });
            }
            break;
          case 'content_block_delta':
            if (event.delta.type === 'text_delta' && event.delta.text) {
              retryable = false;
              this.queue.put({ id, delta: { role: 'assistant', content: event.delta.text } });
            } else if (event.delta.type === 'input_json_delta') {
              const block = blocks.get(event.index);
              if (block) block.json += event.delta.partial_json;
            }
            break;
          case 'content_block_stop': {
            const block = blocks.get(event.index);
            if (!block) break;
            blocks.delete(event.index);
            retryable = false;
            this.queue.put({
              id,
              delta: {
                role: 'assistant',
                toolCalls: [llm.FunctionCall.create({ callId: block.id, name: block.name, args: block.json || '{}' })],
              },
            });
            break;
          }
          case 'message_delta':
            if (event.usage?.output_tokens !== undefined && event.usage.output_tokens !== null) usage.output = event.usage.output_tokens;
            break;
          case 'message_stop': {
            const prompt = usage.input + usage.cacheRead + usage.cacheCreation;
            this.queue.put({
              id,
              usage: {
                completionTokens: usage.output,
                promptTokens: prompt,
                promptCachedTokens: usage.cacheRead,
                cacheCreationTokens: usage.cacheCreation,
                totalTokens: prompt + usage.output,
              },
            });
            break;
          }
        }
      }
    } catch (error) {
      if (this.abortController.signal.aborted || error instanceof Anthropic.APIUserAbortError) return;
      throw toAgentsError(error, retryable);
    }
  }
}
