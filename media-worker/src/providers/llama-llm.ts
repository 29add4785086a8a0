// A GGUF model on the worker itself (LLM_MODEL_PATH) behind the agents LLM interface, through
// node-llama-cpp's prebuilt CPU binary. No weights ship with the platform: the operator supplies the file.
// Tools are offered as node-llama-cpp functions without handlers, so generation stops at a call and the
// agents framework runs the tool, as with any other provider.
import { type APIConnectOptions, APIError, DEFAULT_API_CONNECT_OPTIONS, llm, shortuuid } from '@livekit/agents';
import { ModelFileError, checkGgufFile } from '../../../shared/gguf.ts';
import type { ChatHistoryItem, ChatModelFunctions, ChatModelResponse, Llama, LlamaContext, LlamaModel } from 'node-llama-cpp';

export interface LlamaLLMOptions {
  /** Path of a GGUF file. */
  modelPath: string;
  temperature?: number;
  maxTokens: number;
  /** Tokens of context; `auto` lets node-llama-cpp fit it to memory. */
  contextSize?: number;
}

export { ModelFileError, checkGgufFile };

let llamaRuntime: Promise<Llama> | undefined;
/** Loaded models, shared by every session of the process (weights are large). */
const models = new Map<string, Promise<LlamaModel>>();

async function loadModel(path: string): Promise<LlamaModel> {
  let model = models.get(path);
  if (!model) {
    model = (async () => {
      const { getLlama } = await import('node-llama-cpp');
      // The prebuilt CPU binary only: never build or download at run time.
      llamaRuntime ??= getLlama({ gpu: false, build: 'never', progressLogs: false });
      return (await llamaRuntime).loadModel({ modelPath: path });
    })();
    models.set(path, model);
    model.catch(() => models.delete(path));
  }
  return model;
}

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args || '{}');
  } catch {
    return {};
  }
}

/**
 * Maps a chat context to node-llama-cpp's history: system and user messages as such, assistant text and
 * completed tool calls (call plus output) as model responses; calls without an output are dropped.
 */
export function toLlamaChatHistory(chatCtx: llm.ChatContext): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const outputs = new Map<string, llm.FunctionCallOutput>();
  for (const item of chatCtx.items) if (item.type === 'function_call_output') outputs.set(item.callId, item);

  const modelTurn = (): ChatModelResponse => {
    const last = history.at(-1);
    if (last?.type === 'model') return last;
    const turn: ChatModelResponse = { type: 'model', response: [] };
    history.push(turn);
    return turn;
  };

  for (const item of chatCtx.items) {
    if (item.type === 'message') {
      const text = (item.textContent ?? '').trim();
      if (!text) continue;
      if (item.role === 'assistant') {
        modelTurn().response.push(text);
      } else if (item.role === 'user') {
        const last = history.at(-1);
        if (last?.type === 'user') last.text += `\n${text}`;
        else history.push({ type: 'user', text });
      } else {
        history.push({ type: 'system', text });
      }
    } else if (item.type === 'function_call') {
      const output = outputs.get(item.callId);
      if (!output) continue;
      modelTurn().response.push({
        type: 'functionCall',
        name: item.name,
        params: parseArgs(item.args),
        result: output.isError ? { error: output.output } : output.output,
      });
    }
  }
  return history;
}

export function toLlamaFunctions(toolCtx: llm.ToolContext | undefined): ChatModelFunctions | undefined {
  if (!toolCtx) return undefined;
  const entries = llm.sortedToolEntries(toolCtx);
  if (!entries.length) return undefined;
  return Object.fromEntries(
    entries.map(([name, tool]) => {
      const { $schema: _drop, ...params } = llm.toJsonSchema(tool.parameters, false) as Record<string, unknown>;
      return [name, { description: tool.description, params: params as never }];
    }),
  );
}

export class LlamaLLM extends llm.LLM {
  #opts: LlamaLLMOptions;
  #context?: Promise<LlamaContext>;
  /** One generation at a time on this session's context. */
  #turn: Promise<void> = Promise.resolve();

  constructor(opts: Partial<LlamaLLMOptions> & { modelPath: string }) {
    super();
    checkGgufFile(opts.modelPath);
    this.#opts = { maxTokens: 512, ...opts };
  }

  label(): string {
    return 'local.LlamaLLM';
  }

  override get model(): string {
    return this.#opts.modelPath.split('/').pop() ?? this.#opts.modelPath;
  }

  override get provider(): string {
    return 'local';
  }

  protected override async _prewarmImpl(): Promise<void> {
    await this._context();
  }

  /** @internal */
  _context(): Promise<LlamaContext> {
    this.#context ??= loadModel(this.#opts.modelPath).then((model) =>
      model.createContext(this.#opts.contextSize ? { contextSize: this.#opts.contextSize } : {}),
    );
    return this.#context;
  }

  /** @internal Runs `fn` after the generation in progress, if any. */
  _exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#turn.then(fn);
    this.#turn = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  chat({
    chatCtx,
    toolCtx,
    connOptions = DEFAULT_API_CONNECT_OPTIONS,
  }: {
    chatCtx: llm.ChatContext;
    toolCtx?: llm.ToolContextLike;
    connOptions?: APIConnectOptions;
    parallelToolCalls?: boolean;
    toolChoice?: llm.ToolChoice;
    extraKwargs?: Record<string, unknown>;
  }): LlamaLLMStream {
    return new LlamaLLMStream(this, this.#opts, { chatCtx, toolCtx, connOptions });
  }

  override async aclose(): Promise<void> {
    await super.aclose();
    const context = await this.#context?.catch(() => undefined);
    await context?.dispose();
  }
}

export class LlamaLLMStream extends llm.LLMStream {
  #owner: LlamaLLM;
  #opts: LlamaLLMOptions;

  constructor(
    owner: LlamaLLM,
    opts: LlamaLLMOptions,
    args: { chatCtx: llm.ChatContext; toolCtx?: llm.ToolContextLike; connOptions: APIConnectOptions },
  ) {
    super(owner, args);
    this.#owner = owner;
    this.#opts = opts;
  }

  protected async run(): Promise<void> {
    const id = shortuuid('llama_');
    try {
      await this.#owner._exclusive(async () => {
        const { LlamaChat } = await import('node-llama-cpp');
        const context = await this.#owner._context();
        const sequence = context.getSequence();
        const chat = new LlamaChat({ contextSequence: sequence });
        try {
          const functions = toLlamaFunctions(this.toolCtx);
          const result = await chat.generateResponse(toLlamaChatHistory(this.chatCtx), {
            ...(functions ? { functions } : {}),
            maxTokens: this.#opts.maxTokens,
            ...(this.#opts.temperature !== undefined ? { temperature: this.#opts.temperature } : {}),
            signal: this.abortController.signal,
            stopOnAbortSignal: true,
            onTextChunk: (text) => {
              if (text) this.queue.put({ id, delta: { role: 'assistant', content: text } });
            },
          });
          const calls = (result.functionCalls ?? []) as { functionName: string; params: unknown }[];
          if (calls.length) {
            this.queue.put({
              id,
              delta: {
                role: 'assistant',
                toolCalls: calls.map((c) =>
                  llm.FunctionCall.create({ callId: shortuuid('call_'), name: c.functionName, args: JSON.stringify(c.params ?? {}) }),
                ),
              },
            });
          }
        } finally {
          chat.dispose({ disposeSequence: true });
        }
      });
    } catch (error) {
      if (this.abortController.signal.aborted) return;
      // A local model fails the same way again: no retry.
      throw new APIError(`local model failed: ${(error as Error).message}`, { retryable: false });
    }
  }
}
