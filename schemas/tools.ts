import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, RequiredHere, type Static } from './common.ts';

export const ToolTypes = ['function', 'end_call', 'transfer_call', 'send_dtmf', 'do_not_call'] as const;
export type ToolType = (typeof ToolTypes)[number];
export const ToolMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** How a transfer_call tool transfers: `blind` (SIP REFER) or `warm` (the agent briefs a person first; docs/decisions.md). */
export const TransferModes = ['blind', 'warm'] as const;
export type TransferMode = (typeof TransferModes)[number];

const NAME_PATTERN = '^[a-zA-Z0-9_-]{1,64}$';

const functionExample = {
  id: '5d1e8f2a-4c3b-4a9d-8e7f-1a2b3c4d5e6f',
  type: 'function',
  name: 'lookup_order',
  description: 'Look up an order by its number and return its status.',
  parameters: { type: 'object', properties: { order_number: { type: 'string', description: 'The order number' } }, required: ['order_number'] },
  url: 'https://api.example.com/tools/lookup-order',
  method: 'POST',
  headers: { Authorization: '****9f2c' },
  timeout_ms: 5000,
  destination: null,
  mode: null,
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};
const transferExample = {
  ...functionExample,
  id: '8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d',
  type: 'transfer_call',
  name: 'transfer_to_sales',
  description: 'Transfer the caller to a human in the sales team.',
  parameters: null,
  url: null,
  method: null,
  headers: null,
  timeout_ms: null,
  destination: '+14155550123',
  mode: 'blind',
};

const toolFields = {
  id: Uuid(),
  type: StringEnum(ToolTypes),
  name: Type.String({ description: 'The name the LLM calls the tool by' }),
  description: Nullable(Type.String()),
  parameters: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the arguments (function tools)' })),
  url: Nullable(Type.String({ description: 'Server called with the arguments (function tools)' })),
  method: Nullable(StringEnum(ToolMethods)),
  headers: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description: 'Headers sent to the server; values are masked (`****` + last 4 characters for values of 16 characters or more, else `****`)',
    }),
  ),
  timeout_ms: Nullable(Type.Integer()),
  destination: Nullable(Type.String({ description: 'E.164 number or sip: URI (transfer_call tools)' })),
  mode: Nullable(StringEnum(TransferModes, { description: 'transfer_call tools: `blind` (SIP REFER) or `warm` (the caller holds with music while the agent briefs the person, then the two are joined); null for other types' })),
  created_at: DateTime(),
  updated_at: DateTime(),
};

export const Tool = Type.Object(toolFields, { title: 'Tool', additionalProperties: false, examples: [functionExample, transferExample] });
export type Tool = Static<typeof Tool>;

export const ToolWithSecret = Type.Object(
  {
    ...toolFields,
    signing_secret: Type.String({
      description:
        'Standard Webhooks secret (`whsec_...`) that signs every request to the tool\'s server. Shown only here: on creation and on rotation.',
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4dN8ZJW0yLw='],
    }),
  },
  { title: 'ToolWithSecret', additionalProperties: false, examples: [{ ...functionExample, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4dN8ZJW0yLw=' }] },
);

const Name = Type.String({ pattern: NAME_PATTERN, description: 'Letters, digits, _ and -, at most 64; defaults to the type for built-in tools' });
const Description = Nullable(Type.String({ maxLength: 2000, description: 'Tells the LLM when and how to use the tool' }));
const Parameters = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  description: 'JSON Schema (2020-12) of the arguments, with `type: "object"`; default `{"type":"object","properties":{}}`',
});
const Url = Type.String({ format: 'http-url', maxLength: 2048 });
const Headers = Type.Record(Type.String(), Type.String({ maxLength: 4096, pattern: '^[^\\r\\n\\x00]*$' }), {
  maxProperties: 32,
  description: 'Sent with every request; stored encrypted. On update, a value equal to its masked form keeps the stored value.',
});
const TimeoutMs = Type.Integer({ minimum: 100, maximum: 30000, description: 'Time the call waits for the server, default 5000' });
const Destination = Type.String({ maxLength: 512, description: 'E.164 number (+14155550123) or SIP URI (sip:agent@pbx.example.com)' });
const Mode = StringEnum(TransferModes, {
  description:
    'transfer_call tools: `blind` (default) hands the caller over with a SIP REFER; `warm` holds the caller with music, dials `destination` (an E.164 number) on a second leg, ' +
    'has the agent brief the person with a summary of the call, then joins the two. Busy or no answer: the agent tells the caller and the call goes on',
});

export const CreateTool = Type.Object(
  {
    type: StringEnum(ToolTypes),
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    parameters: Type.Optional(Parameters),
    url: Type.Optional(Url),
    method: Type.Optional(StringEnum(ToolMethods, { description: 'Default POST; GET and DELETE send the arguments as query parameters' })),
    headers: Type.Optional(Headers),
    timeout_ms: Type.Optional(TimeoutMs),
    destination: Type.Optional(Destination),
    mode: Type.Optional(Mode),
  },
  {
    title: 'CreateTool',
    additionalProperties: false,
    description:
      '`function` tools take `name` and `url` (required), `description`, `parameters`, `method`, `headers`, `timeout_ms`. ' +
      '`transfer_call` takes `destination` (required) and `mode` (`blind` or `warm`). All types take `name` and `description`.',
    allOf: [
      { if: { properties: { type: { const: 'function' } } }, then: RequiredHere(['name', 'url']) },
      { if: { properties: { type: { const: 'transfer_call' } } }, then: RequiredHere(['destination']) },
    ],
    examples: [
      {
        type: 'function',
        name: 'lookup_order',
        description: 'Look up an order by its number.',
        parameters: { type: 'object', properties: { order_number: { type: 'string' } }, required: ['order_number'] },
        url: 'https://api.example.com/tools/lookup-order',
        headers: { Authorization: 'Bearer sk_live_abc123def456' },
      },
      { type: 'transfer_call', name: 'transfer_to_sales', destination: '+14155550123' },
      { type: 'transfer_call', name: 'warm_transfer_to_sales', destination: '+14155550123', mode: 'warm' },
      { type: 'end_call' },
    ],
  },
);
export type CreateTool = Static<typeof CreateTool>;

export const UpdateTool = Strict(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    parameters: Type.Optional(Parameters),
    url: Type.Optional(Url),
    method: Type.Optional(StringEnum(ToolMethods)),
    headers: Type.Optional(Headers),
    timeout_ms: Type.Optional(TimeoutMs),
    destination: Type.Optional(Destination),
    mode: Type.Optional(Mode),
  },
  {
    title: 'UpdateTool',
    description: 'Any subset of the fields that apply to the tool\'s type; the type cannot change. `headers` replaces the whole map.',
    examples: [{ timeout_ms: 8000, headers: { Authorization: '****9f2c', 'X-Region': 'eu-west-1' } }],
  },
);
export type UpdateTool = Static<typeof UpdateTool>;

export const ToolParams = Strict({ tool_id: Uuid() });
export const ToolList = ListEnvelope(Tool, 'Tool');
export const ToolListQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ type: Type.Optional(StringEnum(ToolTypes)) })],
  { additionalProperties: false },
);
