/**
 * --wait follows the resource by a watch (docs/api.md, Watching changes): the service
 * pushes each change, and the CLI makes no GET while it waits. Where it cannot watch (the
 * team holds all the watches it may), it polls, and waits all the same.
 */
import { eventually, startTestService, TestService } from '../helpers/service';
import { boundCli } from './run-cli';

let t: TestService;
let json: ReturnType<typeof boundCli>['json'];
const lines: string[] = [];

beforeAll(async () => {
  // A provider that takes 3 s: polling every half second would GET the resource about six times.
  t = await startTestService(
    { CLOUDPLANE_SIM_DELAY_MS: '3000', CLOUDPLANE_WATCHES_PER_TEAM: '1', CLOUDPLANE_LOG_LEVEL: 'info', CLOUDPLANE_REQUEST_LOG_LEVEL: 'info' },
    undefined,
    { write: (line) => lines.push(line) },
  );
  ({ json } = boundCli(t.url, t.key));
});
afterAll(async () => t.stop());

/** The request log's lines of GETs since `from` (an index in the service's log). */
function getsLogged(from: number): Array<{ req: { url: string }; res: { statusCode: number } }> {
  return lines
    .slice(from)
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.msg === 'request completed' && entry.req?.method === 'GET');
}

/** The GETs of one resource the service answered since `from`, watches apart. */
const readsOf = (path: string, from: number): string[] =>
  getsLogged(from)
    .map((entry) => String(entry.req.url))
    .filter((url) => url.startsWith(path) && !url.includes('watch=true'));

/** The watches (a path and `?watch=true`) the service logged as ended since `from`. */
const watchesLogged = (prefix: string, from: number) => getsLogged(from).filter((entry) => entry.req.url.startsWith(prefix));

it('waits by a watch, without polling', async () => {
  const from = lines.length;
  const lb = await json(['load-balancers', 'create', '--name', 'watched', '--region', 'fra1', '--wait']);
  expect(lb.status).toBe('running');
  expect(readsOf(`/api/v1/load-balancers/${lb.id}`, from)).toEqual([]);
  // The watch itself is in the access log once it ended, as every other request is.
  const watchedAt = `/api/v1/load-balancers/${lb.id}?watch=true`;
  await eventually(async () => watchesLogged(watchedAt, from).length === 1, 10_000);
  expect(watchesLogged(watchedAt, from)[0]).toMatchObject({ res: { statusCode: 200 } });
});

it('polls, and waits all the same, where it cannot watch', async () => {
  // The team's one watch is held: the CLI's is refused (429 too_many_watches).
  const controller = new AbortController();
  const held = await fetch(`${t.url}/api/v1/servers?watch=true`, { headers: { authorization: `Bearer ${t.key}` }, signal: controller.signal });
  expect(held.status).toBe(200);
  try {
    const from = lines.length;
    const lb = await json(['load-balancers', 'create', '--name', 'polled', '--region', 'fra1', '--wait']);
    expect(lb.status).toBe('running');
    expect(readsOf(`/api/v1/load-balancers/${lb.id}`, from).length).toBeGreaterThan(1);
  } finally {
    controller.abort();
  }
});
