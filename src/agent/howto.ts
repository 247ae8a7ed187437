/**
 * "How do I <verb> a <family>?": the exact call, read from the OpenAPI document the service
 * serves (method, path, required body fields and an example body), with the CLI command
 * that makes it. The operations are the CLI's own: a family's generic list, get, create,
 * update and delete under its path, and the commands its definition declares, named by the
 * same words (resources/commands.ts).
 */
import type { AnyFamily } from '../resources/family';
import { commandGroupOf, commandPathOf, commandWordsOf } from '../resources/commands';
import { fieldOf, isRecord } from '../lib/unknown-values';
import { pluralOf } from '../lib/plural';

export interface Call {
  method: string;
  /** Under /api/v1. */
  path: string;
  words: string[];
}

/** The family's calls the CLI offers, by the verb that names them. */
export function callsOf(family: AnyFamily): Map<string, Call> {
  const base = `/${family.path}`;
  const group = commandGroupOf(family);
  const calls = new Map<string, Call>([
    ['list', { method: 'GET', path: base, words: [...group, 'list'] }],
    ['get', { method: 'GET', path: `${base}/{id}`, words: [...group, 'get'] }],
    ['create', { method: 'POST', path: base, words: [...group, 'create'] }],
  ]);
  if (family.schemas.update) calls.set('update', { method: 'PATCH', path: `${base}/{id}`, words: [...group, 'update'] });
  if (family.deletable !== false) calls.set('delete', { method: 'DELETE', path: `${base}/{id}`, words: [...group, 'delete'] });
  for (const command of family.commands ?? []) {
    const call = { method: command.method, path: commandPathOf(family, command), words: commandWordsOf(family, command) };
    // A family's own command is found by its last word ("stop", "attach"), or by all of them ("backups create").
    calls.set(command.words.join(' '), call);
    if (!calls.has(command.words[command.words.length - 1])) calls.set(command.words[command.words.length - 1], call);
  }
  return calls;
}

/** A JSON pointer reference of the document (`#/components/schemas/X`) resolved, once or more. */
function resolved(document: unknown, schema: unknown): unknown {
  let current = schema;
  for (let i = 0; i < 10; i++) {
    const ref = fieldOf(current, '$ref');
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return current;
    current = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, key) => fieldOf(node, key.replace(/~1/g, '/').replace(/~0/g, '~')), document);
  }
  return current;
}

/** A value of the field's schema to show in an example: the schema's own example, default or first choice, else one of its type. */
function exampleOf(field: string, schema: unknown, regions: string[], family: AnyFamily): unknown {
  const examples = fieldOf(schema, 'examples');
  if (Array.isArray(examples) && examples.length > 0) return examples[0];
  for (const key of ['example', 'default', 'const']) {
    const value = fieldOf(schema, key);
    if (value !== undefined) return value;
  }
  const choices = fieldOf(schema, 'enum');
  if (Array.isArray(choices) && choices.length > 0) return choices.find((c) => c !== null) ?? choices[0];
  if (field === 'region' && regions.length > 0) return regions[0];
  if (field === 'name') return `my-${family.name.replace(/_/g, '-')}`;
  const variants = fieldOf(schema, 'anyOf') ?? fieldOf(schema, 'oneOf');
  if (Array.isArray(variants) && variants.length > 0)
    return exampleOf(field, variants.find((v) => fieldOf(v, 'type') !== 'null') ?? variants[0], regions, family);
  const described = fromDescription(fieldOf(schema, 'description'));
  switch (fieldOf(schema, 'type')) {
    case 'integer':
    case 'number': {
      const minimum = fieldOf(schema, 'minimum');
      return typeof minimum === 'number' ? Math.max(minimum, 1) : 1;
    }
    case 'boolean':
      return false;
    case 'array': {
      const minItems = fieldOf(schema, 'minItems');
      if (typeof minItems !== 'number' || minItems < 1) return [];
      return [described ?? exampleOf(field, resolvedItems(schema), regions, family)];
    }
    case 'object':
      return {};
    default: {
      if (described !== undefined) return described;
      const text = fieldOf(schema, 'description');
      const description = typeof text === 'string' ? text : '';
      if (fieldOf(schema, 'format') === 'ipv4' || /\bIPv4\b/.test(description)) return '203.0.113.10';
      if (fieldOf(schema, 'format') === 'uri' || /\bHTTPS? address\b/i.test(description) || field.endsWith('url')) return 'https://example.com/hook';
      if (field.endsWith('_id')) return `${field.slice(0, -3)}_…`;
      return '…';
    }
  }
}

const resolvedItems = (schema: unknown) => fieldOf(schema, 'items');

/**
 * An example a field's description gives: "e.g. 192.168.10.0/24", the first `quoted`
 * value, or the first of "Tunnel protocol: ipsec or wireguard".
 */
function fromDescription(description: unknown): string | undefined {
  if (typeof description !== 'string') return undefined;
  const given =
    /\be\.g\.,?\s+`?([^\s`,;)]+?)`?[.,;)]?(?:\s|$)/.exec(description) ?? /`([^`\s]+)`/.exec(description) ?? /:\s+([\w.-]+) or [\w.-]+\.?$/.exec(description);
  return given?.[1];
}

const shellWord = (value: unknown): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /^[\w.:/@…-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
};

/** The answer to "how do I <verb> a <family>", or null when the family has no such call. */
export function howTo(document: unknown, family: AnyFamily, verb: string, regions: string[]): string | null {
  const calls = callsOf(family);
  const call = calls.get(verb);
  if (!call) return null;
  const operation = fieldOf(fieldOf(fieldOf(document, 'paths'), `/api/v1${call.path}`), call.method.toLowerCase());
  if (!isRecord(operation)) return `The OpenAPI document this service serves has no ${call.method} /api/v1${call.path}.`;
  const summary = fieldOf(operation, 'summary');
  const placeholders = [...call.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
  const lines = [`${typeof summary === 'string' ? summary : `To ${verb} ${/^[aeiou]/i.test(family.title) ? 'an' : 'a'} ${family.title}`}:`];
  lines.push(`- API: ${call.method} /api/v1${call.path}`);
  const schema = resolved(document, fieldOf(fieldOf(fieldOf(fieldOf(operation, 'requestBody'), 'content'), 'application/json'), 'schema'));
  const properties = fieldOf(schema, 'properties');
  const requiredList = fieldOf(schema, 'required');
  const required = Array.isArray(requiredList) ? requiredList.filter((f): f is string => typeof f === 'string') : [];
  const flags: string[] = [];
  if (isRecord(properties)) {
    const example = Object.fromEntries(required.map((field) => [field, exampleOf(field, resolved(document, properties[field]), regions, family)]));
    const optional = Object.keys(properties).filter((f) => !required.includes(f));
    lines.push(
      `- Required body fields: ${required.length > 0 ? required.join(', ') : 'none'}${optional.length > 0 ? `; optional: ${optional.join(', ')}` : ''}`,
    );
    lines.push(`- Example body: ${JSON.stringify(example)}`);
    // The CLI takes an array of scalars as repeated flags (cli/flags.ts).
    for (const [field, value] of Object.entries(example)) {
      const values = Array.isArray(value) && value.every((v) => typeof v !== 'object') ? value : [value];
      for (const v of values) flags.push(`--${field.replace(/_/g, '-')} ${shellWord(v)}`);
    }
  }
  const cli = ['cloudplane', ...call.words, ...placeholders.map((p) => p.toUpperCase()), ...flags].join(' ');
  lines.push(`- CLI: ${cli}`);
  lines.push(`The OpenAPI document is at /api/v1/openapi.json; the reference at /docs.`);
  return lines.join('\n');
}

/** What may be done with a family, by the verbs "how do I …" understands. */
export function verbsOf(family: AnyFamily): string[] {
  return [...callsOf(family).keys()].filter((verb) => !verb.includes(' '));
}

/** "how do I … a <family>" without a verb this family has. */
export function noSuchCall(family: AnyFamily, verb: string): string {
  const title = pluralOf(family.title);
  return `${title[0].toUpperCase()}${title.slice(1)} have no "${verb}". You can ask how to: ${verbsOf(family).join(', ')} (for example "how do I ${verbsOf(family).includes('create') ? 'create' : verbsOf(family)[0]} ${/^[aeiou]/i.test(family.title) ? 'an' : 'a'} ${family.title}?").`;
}
