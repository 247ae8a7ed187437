/**
 * A family's records as JSON bytes, made once per stored version of a resource rather than
 * on every read. A record is made from the stored object alone (the family's toRecord), and
 * a store never changes an object it has handed out: the embedded store freezes them, and
 * every write, on either store, puts a new object in place of the old. So the bytes made
 * for an object stay right as long as that object exists; they are held weakly by it, and
 * a version replaced or deleted takes its bytes with it. The cost is about a record's JSON
 * (some hundred bytes, outside the V8 heap) for every resource read since it last changed.
 *
 * The bytes come from the schema serialiser Fastify compiles for the family's record
 * schema, the one that serialises `data` in the routes' response schemas, so an answer
 * made of them (envelope.ts, sendSerialised) is the answer the route would have made.
 */
import type { FastifyReply } from 'fastify';
import type { AnyFamily, Resource } from '../resources/family';
import { recordOf } from '../resources/record-of';

export class RecordBytes {
  private readonly made = new WeakMap<Resource, Buffer>();

  constructor(private readonly family: AnyFamily) {}

  /** `reply`: whose route's serialiser compiler to use (Fastify caches what it compiles per route). */
  of(resource: Resource, reply: FastifyReply): Buffer {
    let bytes = this.made.get(resource);
    if (bytes === undefined) {
      const serialize = reply.compileSerializationSchema(this.family.schemas.record);
      const json = serialize(recordOf(this.family, resource));
      // A buffer of its own, not a slice of Node's shared 8 KiB pool: a kept slice would keep
      // its whole pool slab alive as long as it lives.
      bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
      bytes.write(json);
      this.made.set(resource, bytes);
    }
    return bytes;
  }
}
