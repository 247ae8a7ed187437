/**
 * The last-resort handler (src/lib/last-resort.ts, installed by main.ts) on real
 * processes meeting real failures: an operational error (a failed system call) that
 * nothing caught is logged and the process keeps serving; a programming error ends it
 * with exit code 1 and the stack in the log. Classification is checked on real errors.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { isOperationalError } from '../../src/lib/last-resort';

jest.setTimeout(60_000);

const CHILD = path.resolve(__dirname, '../../dist/test/fixtures/last-resort-child.js');

/** The error a call throws. */
function thrownBy(call: () => unknown): unknown {
  try {
    call();
  } catch (err) {
    return err;
  }
  throw new Error('the call did not throw');
}

describe('isOperationalError', () => {
  it('calls failed system calls operational', async () => {
    const full = fs.openSync('/dev/full', 'w');
    try {
      expect(isOperationalError(thrownBy(() => fs.writeSync(full, 'x')))).toBe(true); // ENOSPC
    } finally {
      fs.closeSync(full);
    }
    expect(isOperationalError(thrownBy(() => fs.readFileSync('/nonexistent/cloudplane')))).toBe(true); // ENOENT
    expect(isOperationalError(thrownBy(() => fs.readdirSync('/etc/hostname')))).toBe(true); // ENOTDIR
    const refused = await new Promise<Error>((resolve) => {
      // A port just closed: nothing listens there.
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => net.connect(port, '127.0.0.1').once('error', resolve));
      });
    });
    expect((refused as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(isOperationalError(refused)).toBe(true);
  });

  it('calls everything else a programming error', () => {
    expect(isOperationalError(thrownBy(() => (JSON.parse('{}') as { a: { b: number } }).a.b))).toBe(false); // TypeError
    expect(isOperationalError(thrownBy(() => new Function('return notDefinedAnywhere')()))).toBe(false); // ReferenceError
    // Node's argument checks carry a code but are no system call: a bug in the caller.
    const invalidArgument = thrownBy(() => fs.readFileSync({} as unknown as string));
    expect((invalidArgument as NodeJS.ErrnoException).code).toBe('ERR_INVALID_ARG_TYPE');
    expect(isOperationalError(invalidArgument)).toBe(false);
    expect(isOperationalError('a thrown string')).toBe(false);
    expect(isOperationalError(Object.assign(new Error('looks like one'), { code: 'ENOSPC' }))).toBe(false);
  });
});

interface Run {
  exitCode: Promise<number | null>;
  port: Promise<number>;
  logs: () => Array<Record<string, any>>;
  kill: () => void;
}

function runChild(failure: string): Run {
  if (!fs.existsSync(CHILD)) throw new Error(`${CHILD} is missing: build first (make build, or npx tsc -p .)`);
  const child = spawn(process.execPath, [CHILD, failure], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const port = new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening (\d+)/.exec(stderr);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`exited before listening: ${stderr}`)));
  });
  port.catch(() => undefined);
  return {
    exitCode: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    port,
    logs: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line)),
    kill: () => child.kill('SIGKILL'),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the last-resort handler on a real process', () => {
  it.each([
    ['enospc', 'uncaughtException'],
    ['rejection', 'unhandledRejection'],
  ])('logs an operational error that nothing caught (%s) and keeps serving', async (failure, origin) => {
    const run = runChild(failure);
    try {
      const port = await run.port;
      await sleep(500);
      const response = await fetch(`http://127.0.0.1:${port}/`);
      expect(await response.text()).toBe('still serving');
      const logged = run.logs().find((line) => line.origin === origin);
      expect(logged).toMatchObject({ level: 50, err: { code: 'ENOSPC', syscall: 'write' } });
      expect(logged!.msg).toMatch(/keeps serving/);
    } finally {
      run.kill();
    }
  });

  it('exits with code 1 on a programming error, with its stack in the log', async () => {
    const run = runChild('typeerror');
    expect(await run.exitCode).toBe(1);
    const fatal = run.logs().find((line) => line.level === 60);
    expect(fatal).toMatchObject({ origin: 'uncaughtException', err: { type: 'TypeError' } });
    expect(fatal!.err.stack).toMatch(/TypeError: Cannot read properties of undefined[\s\S]*last-resort-child\.js/);
  });
});
