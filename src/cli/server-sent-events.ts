/**
 * Reads a text/event-stream body into its events, parsed by eventsource-parser (the
 * parser of the WHATWG EventSource rules: CR, LF and CRLF line ends, multi-line data,
 * ids, comments), for the CLI's streams: a listener's deliveries, a watch's changes.
 */
import { createParser } from 'eventsource-parser';

export interface ServerSentEvent {
  /** The event's name; `message` when it has none, as EventSource names it. */
  event: string;
  data: string;
  id?: string;
}

export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const parsed: ServerSentEvent[] = [];
  const parser = createParser({
    onEvent: ({ event, data, id }) => {
      parsed.push({ event: event ?? 'message', data, ...(id === undefined ? {} : { id }) });
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    yield* parsed.splice(0);
  }
}
