// A form generated from a JSON Schema (the API's own, from /openapi.json, which the control plane builds from
// schemas/): one control per property, nested objects as fieldsets, the schema's descriptions as help. Nothing
// about a resource's fields is restated here; only choices the schema cannot know (which models exist) are
// supplied by the page. Validation is the server's: the form is `novalidate` and a 422 lands on its field. The
// schema's own annotations group the fields (`x-groups`, a section each, one collapsed) and name them (`x-labels`).
import { h } from './dom.ts';

export type Json = Record<string, unknown>;
export interface Schema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  description?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  format?: string;
  $ref?: string;
  [k: string]: unknown;
}

let openapi: Promise<Json> | null = null;
/** The API's OpenAPI document (public, same origin, fetched once per page load). */
export function apiDocument(): Promise<Json> {
  openapi ??= fetch('/openapi.json', { credentials: 'omit', cache: 'no-store' }).then((r) => {
    if (!r.ok) throw new Error(`The API description could not be loaded (HTTP ${r.status}).`);
    return r.json() as Promise<Json>;
  });
  openapi.catch(() => (openapi = null));
  return openapi;
}

/** A component schema with every $ref resolved (components only; the document is ours). */
export async function componentSchema(name: string): Promise<Schema> {
  const doc = await apiDocument();
  const components = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Schema>;
  const resolve = (s: Schema, depth = 0): Schema => {
    if (depth > 20) return s;
    if (s.$ref) return resolve(components[s.$ref.replace('#/components/schemas/', '')] ?? {}, depth + 1);
    const out: Schema = { ...s };
    if (s.properties) out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, resolve(v, depth + 1)]));
    if (s.items) out.items = resolve(s.items, depth + 1);
    return out;
  };
  const s = components[name];
  if (!s) throw new Error(`The API description has no ${name} schema.`);
  return resolve(s);
}

const types = (s: Schema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
const nullable = (s: Schema): boolean => types(s).includes('null');
const mainType = (s: Schema): string => types(s).find((t) => t !== 'null') ?? (s.enum ? 'string' : 'json');

export const humanize = (name: string): string => {
  const t = name
    .replace(/_/g, ' ')
    .replace(/\bid\b/g, 'ID')
    .replace(/\bms\b/g, '(ms)')
    .replace(/\bllm\b/g, 'LLM')
    .replace(/\btts\b/g, 'TTS');
  return t.charAt(0).toUpperCase() + t.slice(1);
};

type Kind = 'text' | 'textarea' | 'number' | 'bool' | 'enum' | 'lines' | 'json' | 'choice';
interface Leaf {
  path: string[];
  kind: Kind;
  schema: Schema;
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  initial: string;
}

export interface Choice {
  value: string;
  label: string;
}

/** A section of the form (the schema's `x-groups`). */
interface Group {
  id: string;
  label: string;
  fields: string[];
  collapsed?: boolean;
}

const labelsOf = (s: Schema): Record<string, string> => (s['x-labels'] as Record<string, string> | undefined) ?? {};

export interface SchemaForm {
  element: HTMLFieldSetElement;
  /** The request body: on create, every field given; on edit, only what changed (objects whole). */
  value(): Json;
}

function rawOf(kind: Kind, v: unknown): string {
  if (v === undefined) return '';
  if (v === null) return kind === 'enum' || kind === 'choice' || kind === 'bool' ? 'null' : '';
  if (kind === 'lines') return Array.isArray(v) ? v.join('\n') : '';
  if (kind === 'json') return JSON.stringify(v, null, 2);
  return String(v);
}

function kindOf(s: Schema, choices: boolean): Kind {
  if (choices) return 'choice';
  const t = mainType(s);
  if (s.enum) return 'enum';
  if (t === 'boolean') return 'bool';
  if (t === 'integer' || t === 'number') return 'number';
  if (t === 'string') return (s.maxLength ?? 0) > 300 ? 'textarea' : 'text';
  if (t === 'array' && s.items && mainType(s.items) === 'string' && !s.items.enum) return 'lines';
  return 'json';
}

/**
 * Builds the form. `current` is the resource being edited (null on create); `choices` gives options for fields
 * whose values are ids of other resources (llm_id: the organisation's models).
 */
export function schemaForm(schema: Schema, opts: { idPrefix: string; current: Json | null; choices?: Record<string, Choice[]>; skip?: string[] }): SchemaForm {
  const leaves: Leaf[] = [];
  const editing = opts.current !== null;

  const build = (s: Schema, path: string[], required: boolean, current: unknown, labels: Record<string, string>): HTMLElement => {
    const name = path[path.length - 1]!;
    const label = labels[name] ?? humanize(name);
    const dotted = path.join('.');
    const id = `${opts.idPrefix}-${path.join('-')}`;
    if (mainType(s) === 'object' && s.properties) {
      const req = new Set(s.required ?? []);
      const cur = (current && typeof current === 'object' ? current : {}) as Json;
      return h(
        'fieldset',
        { class: 'group', 'data-path': dotted, id, tabindex: -1 },
        h('legend', null, label),
        s.description ? h('p', { class: 'note' }, s.description) : null,
        Object.entries(s.properties).map(([k, sub]) => build(sub, [...path, k], req.has(k), cur[k], labelsOf(s))),
      );
    }
    const choiceList = opts.choices?.[dotted];
    const kind = kindOf(s, Boolean(choiceList));
    let control: Leaf['control'];
    const unset = editing ? '(unchanged)' : required ? 'Choose…' : '(default)';
    if (kind === 'enum' || kind === 'bool' || kind === 'choice') {
      const options: Choice[] =
        kind === 'bool'
          ? [
              { value: 'true', label: 'Yes' },
              { value: 'false', label: 'No' },
            ]
          : kind === 'choice'
            ? choiceList!
            : (s.enum ?? []).filter((v) => v !== null).map((v) => ({ value: String(v), label: String(v) }));
      control = h(
        'select',
        null,
        h('option', { value: '' }, unset),
        options.map((o) => h('option', { value: o.value }, o.label)),
        nullable(s) ? h('option', { value: 'null' }, 'None (null)') : null,
      );
    } else if (kind === 'textarea' || kind === 'lines' || kind === 'json') {
      control = h('textarea', { rows: kind === 'json' ? 4 : 3, spellcheck: kind === 'textarea' ? 'true' : 'false' });
    } else if (kind === 'number') {
      control = h('input', { type: 'number', inputmode: 'decimal', step: mainType(s) === 'integer' ? 1 : 'any', min: s.minimum, max: s.maximum });
    } else {
      control = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
    }
    const initial = rawOf(kind, current);
    control.value = initial;
    control.id = id;
    control.dataset.path = dotted;
    if (required) control.setAttribute('aria-required', 'true');
    const helpParts = [s.description, kind === 'lines' ? 'One per line.' : null, kind === 'json' ? 'JSON.' : null].filter(Boolean).join(' ');
    if (helpParts) control.setAttribute('aria-describedby', `${id}-help`);
    leaves.push({ path, kind, schema: s, control, initial });
    return h(
      'div',
      { class: 'field' },
      h('label', { for: id }, label, required ? h('span', { class: 'req' }, ' (required)') : null),
      control,
      helpParts ? h('p', { class: 'note', id: `${id}-help` }, helpParts) : null,
    );
  };

  const req = new Set(schema.required ?? []);
  const skip = new Set(opts.skip ?? []);
  const props = Object.entries(schema.properties ?? {}).filter(([k]) => !skip.has(k));
  const field = ([k, sub]: [string, Schema]) => build(sub, [k], req.has(k), opts.current?.[k], labelsOf(schema));
  const groups = (schema['x-groups'] as Group[] | undefined) ?? null;
  const element = h(
    'fieldset',
    { class: 'schema-form' },
    h('legend', { class: 'sr-only' }, 'Settings'),
    groups ? grouped(groups, props, field, opts.idPrefix) : props.map(field),
  );

  const parse = (leaf: Leaf): { set: boolean; value?: unknown } => {
    const raw = leaf.control.value;
    if (raw === '') {
      // Emptying a text field that had a value clears it (null) where the schema allows null.
      if (editing && leaf.initial !== '' && nullable(leaf.schema) && (leaf.kind === 'text' || leaf.kind === 'textarea')) return { set: true, value: null };
      if (editing && leaf.initial !== '' && leaf.kind === 'lines') return { set: true, value: [] };
      return { set: false };
    }
    if (raw === 'null') return { set: true, value: null };
    switch (leaf.kind) {
      case 'bool':
        return { set: true, value: raw === 'true' };
      case 'number':
        return { set: true, value: Number.isFinite(Number(raw)) ? Number(raw) : raw };
      case 'lines':
        return {
          set: true,
          value: raw
            .split('\n')
            .map((x) => x.trim())
            .filter(Boolean),
        };
      case 'json':
        try {
          return { set: true, value: JSON.parse(raw) };
        } catch {
          return { set: true, value: raw }; // the server's 422 says it is not the expected type
        }
      default:
        return { set: true, value: raw };
    }
  };

  return {
    element,
    value() {
      const out: Json = {};
      const changedRoots = new Set(leaves.filter((l) => l.control.value !== l.initial).map((l) => l.path[0]!));
      for (const leaf of leaves) {
        // On edit, a nested object is replaced whole by the API, so all of a changed object's fields are sent.
        if (editing && !changedRoots.has(leaf.path[0]!)) continue;
        if (editing && leaf.path.length === 1 && leaf.control.value === leaf.initial) continue;
        const { set, value } = parse(leaf);
        if (!set) continue;
        let target = out;
        for (const p of leaf.path.slice(0, -1)) target = (target[p] ??= {}) as Json;
        target[leaf.path[leaf.path.length - 1]!] = value;
      }
      return out;
    },
  };
}

/**
 * The fields in their groups, in the groups' order: each group a section with a heading; a collapsed one (the
 * advanced settings) a disclosure. A field no group names joins the last collapsed group, or the last group.
 */
function grouped(groups: Group[], props: [string, Schema][], field: (p: [string, Schema]) => HTMLElement, idPrefix: string): HTMLElement[] {
  const named = new Set(groups.flatMap((g) => g.fields));
  const rest = props.filter(([k]) => !named.has(k));
  const catchAll = [...groups].reverse().find((g) => g.collapsed) ?? groups[groups.length - 1]!;
  return groups.flatMap((g) => {
    const members = [...props.filter(([k]) => g.fields.includes(k)), ...(g === catchAll ? rest : [])];
    if (!members.length) return [];
    const id = `${idPrefix}-group-${g.id}`;
    const fields = h('div', { class: 'group-fields' }, members.map(field));
    if (g.collapsed) return [h('details', { class: 'form-group', id, 'data-group': g.id }, h('summary', null, h('h3', null, g.label)), fields)];
    return [h('section', { class: 'form-group', 'aria-labelledby': `${id}-h`, 'data-group': g.id }, h('h3', { id: `${id}-h` }, g.label), fields)];
  });
}
