/**
 * The embedded store's snapshot (`store.snapshot.json`): `{"revision":N,"objects":[...]}`,
 * written one object to a line, so that each object's JSON is a range of bytes of the file
 * that the store reads it back from (kept-records.ts), and the snapshot is read at start an
 * object at a time rather than parsed whole into a hundred thousand objects at once. It is
 * JSON all the same; a snapshot written in one line (before this layout) is read whole.
 */
import type { RecordPlace } from './kept-records';
import type { StoredObject } from './types';

const NEWLINE = 0x0a;
const HEAD = /^\{"revision":(\d+),"objects":\[$/;
const TAIL = ']}';

/** The snapshot's text, and where each object's JSON is in it, in the order given. */
export function snapshotText(revision: number, objectTexts: readonly string[]): { text: string; places: RecordPlace[] } {
  const head = `{"revision":${revision},"objects":[`;
  const lines = [head];
  const places: RecordPlace[] = [];
  let at = Buffer.byteLength(head) + 1;
  objectTexts.forEach((text, i) => {
    // Every line but the first starts with the comma before its object.
    const comma = i === 0 ? '' : ',';
    const length = Buffer.byteLength(text);
    lines.push(comma + text);
    places.push({ file: 'snapshot', at: at + comma.length, length });
    at += comma.length + length + 1;
  });
  lines.push(TAIL);
  return { text: lines.join('\n'), places };
}

export interface SnapshotObject {
  object: StoredObject;
  /** Where its JSON is: bytes of the snapshot file, or (a one-line snapshot) its text. */
  place: RecordPlace;
}

/** A snapshot's revision, and its objects one by one. */
export function readSnapshot(content: Buffer): { revision: number; objects: Iterable<SnapshotObject> } {
  const firstLineEnd = content.indexOf(NEWLINE);
  const head = firstLineEnd === -1 ? null : HEAD.exec(content.toString('utf8', 0, firstLineEnd));
  if (head) return { revision: Number(head[1]), objects: linesOf(content, firstLineEnd + 1) };
  const whole = JSON.parse(content.toString('utf8')) as { revision: number; objects: StoredObject[] };
  return { revision: whole.revision, objects: whole.objects.map((object) => ({ object, place: { file: 'memory', text: JSON.stringify(object) } })) };
}

function* linesOf(content: Buffer, from: number): Generator<SnapshotObject> {
  for (let start = from; start < content.length;) {
    const newline = content.indexOf(NEWLINE, start);
    const end = newline === -1 ? content.length : newline;
    const at = content[start] === 0x2c ? start + 1 : start; // the comma before every object but the first
    const json = content.toString('utf8', at, end);
    if (json === TAIL) return;
    yield { object: JSON.parse(json) as StoredObject, place: { file: 'snapshot', at, length: end - at } };
    start = end + 1;
  }
  throw new Error('the snapshot ends before its last line');
}
