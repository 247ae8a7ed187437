/**
 * YAML that means the same to every reader. kubectl and helm read YAML 1.1, where a plain
 * `on`, `no`, `y`, `017` or `1:20` is not a string; the `yaml` package, editors and most
 * other tools read YAML 1.2, where a plain `0o17` is not one either. A string either
 * version would read as something else is written quoted.
 */
import { Document, parse, visit } from 'yaml';

const VERSIONS = ['1.1', '1.2'] as const;
const MERGE_KEY = '<<';

/** Whether `text`, written plain, reads back as that same string under `version`. */
function readsAsItself(text: string, version: (typeof VERSIONS)[number]): boolean {
  try {
    return parse(text, { version }) === text;
  } catch {
    return false;
  }
}

/**
 * `value` as YAML both 1.1 and 1.2 readers parse to the same value. Stringified as 1.1
 * (which quotes 1.1's booleans, nulls, octals, sexagesimals and timestamps), then any
 * string left plain that 1.2 would still read differently is quoted too.
 */
export function stringifyPortableYaml(value: unknown, options: { lineWidth?: number } = {}): string {
  const doc = new Document(value, { version: '1.1' });
  visit(doc, {
    Scalar(key, node) {
      // As a key, `<<` is a merge to a YAML 1.1 reader, and the package writes it plain even when asked to quote it.
      if (key === 'key' && node.value === MERGE_KEY) throw new Error('a key "<<" reads as a merge in YAML 1.1; it cannot be written portably');
      if (typeof node.value === 'string' && !VERSIONS.every((version) => readsAsItself(String(node.value), version))) {
        node.type = 'QUOTE_DOUBLE';
      }
    },
  });
  return doc.toString({ lineWidth: options.lineWidth ?? 80 });
}
