/**
 * What the embedded store keeps of its objects (kept-records.ts): a bounded set parsed,
 * the others parsed again from their JSON when read, equal and frozen either way; and its
 * snapshot's layout (snapshot-text.ts), whose lines are where objects are read from.
 */
import { KeptRecords, RecordPlace } from '../../src/store/kept-records';
import { readSnapshot, snapshotText } from '../../src/store/snapshot-text';
import type { StoredObject } from '../../src/store/types';

const object = (id: string, note = ''): StoredObject => ({
  meta: {
    kind: 'Thing',
    id,
    team: 'team_a',
    labels: {},
    generation: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    resourceVersion: '1',
  },
  spec: { name: id, note: note.padEnd(900, 'x') },
  status: { status: 'running', conditions: [{ type: 'Ready', status: 'True' }] },
});

describe('KeptRecords', () => {
  // Places in memory: the store's places in its files read the same way (embedded-store.test.ts).
  const read = (place: RecordPlace) => (place.file === 'memory' ? place.text : '');
  const inMemory = (o: StoredObject): RecordPlace => ({ file: 'memory', text: JSON.stringify(o) });

  it('keeps the newest parsed objects up to its limit and parses the others from their JSON, equal and deep-frozen', () => {
    const kept = new KeptRecords(2, read);
    const records = ['a', 'b', 'c'].map((id) => kept.keep(inMemory(object(id)), object(id)));
    expect(records.map((r) => kept.parsedOf(r) !== undefined)).toEqual([false, true, true]);
    const again = kept.objectOf(records[0]);
    expect(again).toEqual(object('a'));
    expect(Object.isFrozen(again.status.conditions)).toBe(true);
    // Parsed again, it is kept as the newest; the oldest unread one made room.
    expect(kept.parsedOf(records[0])).toBe(again);
    expect(kept.parsedOf(records[1])).toBeUndefined();
  });

  it('gives a read object a second chance before dropping it', () => {
    const kept = new KeptRecords(2, read);
    const a = kept.keep(inMemory(object('a')), object('a'));
    kept.keep(inMemory(object('b')), object('b'));
    const readA = kept.objectOf(a);
    kept.keep(inMemory(object('c')), object('c'));
    expect(kept.parsedOf(a)).toBe(readA);
  });

  it('forgets a released record', () => {
    const kept = new KeptRecords(2, read);
    const a = kept.keep(inMemory(object('a')), object('a'));
    kept.release(a);
    expect(kept.parsedOf(a)).toBeUndefined();
  });
});

describe('snapshot text', () => {
  it('is JSON, written an object to a line, and reads back object by object', () => {
    const objects = [object('a'), object('é')];
    const { text, places } = snapshotText(
      7,
      objects.map((o) => JSON.stringify(o)),
    );
    expect(JSON.parse(text)).toEqual({ revision: 7, objects });
    const bytes = Buffer.from(text);
    const at = (place: RecordPlace): unknown => (place.file === 'snapshot' ? JSON.parse(bytes.toString('utf8', place.at, place.at + place.length)) : undefined);
    expect(places.map(at)).toEqual(objects);
    const read = readSnapshot(bytes);
    expect(read.revision).toBe(7);
    expect([...read.objects].map(({ object, place }) => [object, at(place)])).toEqual(objects.map((o) => [o, o]));
  });

  it('reads a snapshot written in one line, as before this layout, and an empty one', () => {
    const read = readSnapshot(Buffer.from(JSON.stringify({ revision: 3, objects: [object('a')] })));
    expect(read.revision).toBe(3);
    expect([...read.objects]).toEqual([{ object: object('a'), place: { file: 'memory', text: JSON.stringify(object('a')) } }]);
    expect([...readSnapshot(Buffer.from(snapshotText(0, []).text)).objects]).toEqual([]);
  });

  it('refuses a snapshot cut short', () => {
    const { text } = snapshotText(1, [JSON.stringify(object('a')), JSON.stringify(object('b'))]);
    expect(() => [...readSnapshot(Buffer.from(text.slice(0, text.lastIndexOf('\n')))).objects]).toThrow(/ends before/);
  });
});
