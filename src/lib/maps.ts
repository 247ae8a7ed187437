/** The value of `key` in `map`, first set to `create()` when it has none (typed by the map: `new Map()` there is no `any`). */
export function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => NoInfer<V>): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

/** `record[key]`, typed as what it may be: undefined where the record has no such key. */
export const entryOf = <V>(record: Readonly<Record<string, V>>, key: string): V | undefined => record[key];
