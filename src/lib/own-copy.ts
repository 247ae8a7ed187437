/**
 * A string with memory of its own. V8 makes a slice of a string (13 characters or more) a
 * view of the whole, which then lives as long as the slice does: a short id cut from a
 * long key and kept in a map held the key entire. Copied through a buffer, the id is only
 * itself.
 */
export function ownCopy(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}
