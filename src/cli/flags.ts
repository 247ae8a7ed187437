/**
 * Command-line flags built from a TypeBox schema (a create or update body, a list's query):
 * one `--kebab-name` per field, parsed to the field's type, so a field added to a schema
 * is a flag without further code. Arrays take repeated flags or a JSON array; objects and
 * unions take JSON; booleans take `--flag`, `--flag true` or `--flag false`.
 */
import fs from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { TObject, TSchema } from '@sinclair/typebox';
import YAML from 'yaml';
import { usageError } from './exit-codes';
import { isRecord, recordAt, textOf } from '../lib/unknown-values';

export const kebab = (field: string) => field.replace(/_/g, '-');

/** The attribute commander stores a field's flag under; prefixed so flags never meet the command's own options. */
const attributeOf = (prefix: string, field: string) => `${prefix}:${field}`;

/** `true`, `false`, or nothing (commander hands over the preset `true`). */
function parseBoolean(value: string | boolean): boolean {
  if (value === true || value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError('expected true or false.');
}

function parseNumber(integer: boolean) {
  return (value: string): number => {
    const number = Number(value);
    if (value.trim() === '' || !Number.isFinite(number) || (integer && !Number.isInteger(number)))
      throw new InvalidArgumentError(`expected ${integer ? 'an integer' : 'a number'}.`);
    return number;
  };
}

/** A duration flag (--timeout, --wait-timeout): positive seconds, fractions allowed. */
export function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('must be a positive number of seconds.');
  return seconds;
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('expected a JSON value.');
  }
}

/** A union, object or anything else without a plain type: JSON, or the text itself where a string is allowed. */
function parseLoose(schema: object) {
  const allowsString = JSON.stringify(schema).includes('"type":"string"');
  return (value: string): unknown => {
    try {
      return JSON.parse(value);
    } catch {
      if (allowsString) return value;
      throw new InvalidArgumentError('expected a JSON value.');
    }
  };
}

/** `schema`: a field's, or an array's `items` (which TypeBox types loosely). */
function scalarParser(schema: Record<string, unknown>): ((value: string) => unknown) | undefined {
  if (schema.type === 'integer') return parseNumber(true);
  if (schema.type === 'number') return parseNumber(false);
  if (schema.type === 'string') return undefined;
  if (schema.type === 'boolean') return parseBoolean;
  return parseLoose(schema);
}

function optionFor(field: string, schema: TSchema): Option {
  const description = String(schema.description ?? '').replace(/\s+/g, ' ');
  if (schema.type === 'boolean') {
    return new Option(`--${kebab(field)} [bool]`, description).argParser(parseBoolean).preset(true);
  }
  if (schema.type === 'array') {
    const item = scalarParser(recordAt(schema, 'items') ?? {}) ?? ((v: string) => v);
    const option = new Option(`--${kebab(field)} <value>`, `${description} (repeat the flag, or give a JSON array)`);
    return option.argParser((value: string, previous: unknown[] | undefined) => {
      // Starting with `[`, valid JSON is an array.
      const parsed = value.trim().startsWith('[') ? parseJson(value) : undefined;
      const values: unknown[] = Array.isArray(parsed) ? parsed : [item(value)];
      return [...(previous ?? []), ...values];
    });
  }
  const option = new Option(
    `--${kebab(field)} <${schema.type === 'string' || schema.type === 'integer' || schema.type === 'number' ? 'value' : 'json'}>`,
    description,
  );
  if (Array.isArray(schema.enum)) option.choices(schema.enum.map(String));
  const parser = scalarParser(schema);
  return parser ? option.argParser(parser) : option;
}

/** Adds a flag per field of `schema`, leaving out `skip` (fields given as arguments). */
export function addSchemaFlags(command: Command, prefix: string, schema: TObject, skip: string[] = []): void {
  for (const [field, fieldSchema] of Object.entries(schema.properties)) {
    if (skip.includes(field)) continue;
    const option = optionFor(field, fieldSchema);
    option.attributeName = () => attributeOf(prefix, field);
    command.addOption(option);
  }
}

/** The fields given as flags, by field name. */
export function schemaValues(opts: Record<string, unknown>, prefix: string, schema: TObject): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of Object.keys(schema.properties)) {
    const value = opts[attributeOf(prefix, field)];
    if (value !== undefined) values[field] = value;
  }
  return values;
}

/** A body from `--file PATH` (JSON or YAML; `-` reads stdin). */
export function readBodyFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw usageError(`cannot read ${path === '-' ? 'stdin' : path}: ${textOf(err)}`);
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    throw usageError(`${path === '-' ? 'stdin' : path} is neither JSON nor YAML: ${textOf(err).split('\n')[0]}`);
  }
  if (!isRecord(parsed) || Array.isArray(parsed)) throw usageError(`${path === '-' ? 'stdin' : path} must hold an object of fields`);
  return parsed;
}
