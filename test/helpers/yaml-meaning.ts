/**
 * Whether YAML means the same to a YAML 1.1 reader (kubectl, helm: go-yaml) and a 1.2 one
 * (the `yaml` package's default, editors): a plain `on` is a boolean to the first and a
 * string to the second, so an enum written that way is another enum once installed.
 */
import { parseAllDocuments } from 'yaml';

type Version = '1.1' | '1.2';

const documentsAs = (text: string, version: Version): unknown[] =>
  parseAllDocuments(text, { version }).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`YAML ${version}: ${doc.errors[0].message}`);
    return doc.toJS();
  });

const describe = (value: unknown) => (value instanceof Date ? `timestamp ${value.toISOString()}` : `${typeof value} ${JSON.stringify(value)}`);

/** Paths where the two readings differ ([0]: the first document), e.g. `[0].spec.enum[0]: 1.1 reads boolean true, 1.2 reads string "on"`. */
function differences(a: unknown, b: unknown, at: string, out: string[]): void {
  const bothObjects = a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !(a instanceof Date) && !(b instanceof Date);
  if (bothObjects && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
    for (const key of keys) {
      const next = Array.isArray(a) ? `${at}[${key}]` : `${at}.${key}`;
      differences((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], next, out);
    }
    return;
  }
  const same = a instanceof Date || b instanceof Date ? false : Object.is(a, b);
  if (!same) out.push(`${at || '$'}: 1.1 reads ${describe(a)}, 1.2 reads ${describe(b)}`);
}

/** Every place `text` (one or more YAML documents) reads differently under YAML 1.1 and 1.2; empty when none. */
export function yamlMeaningDifferences(text: string): string[] {
  const out: string[] = [];
  differences(documentsAs(text, '1.1'), documentsAs(text, '1.2'), '', out);
  return out;
}
