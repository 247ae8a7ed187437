/**
 * What a start of the service costs, with route schemas compiled on first use (as it
 * starts now, src/api/plugins/schema-compilation.ts) against compiled at start (the same
 * start followed by compileWaitingSchemas: what every start did before).
 *
 *   node dist/bench/service-start.js [rounds]
 *
 * Each round starts two fresh processes, one of each kind, in turn, so a load that comes and
 * goes hits both alike. A process loads the service's modules, starts it on the embedded
 * store in a fresh data directory (simulated provider, logging off), answers one request,
 * stops, and reports the CPU it used: the cost a replica's restart pays, and a test file
 * that starts a service. Writes bench/results/service-start-<UTC timestamp>.json and
 * service-start-latest.md.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Kind = 'lazy' | 'eager';

interface Sample {
  /** CPU milliseconds of the process: loading the modules, starting, one request, stopping. */
  processCpuMs: number;
  /** CPU milliseconds of startService alone (with the compilation, for `eager`). */
  startCpuMs: number;
}

const cpuMs = (since?: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

/** One start, in this process (the child's side). */
async function startOnce(kind: Kind): Promise<Sample> {
  const { loadConfig } = await import('../src/config');
  const { createLogger } = await import('../src/logger');
  const { startService } = await import('../src/service');
  const { compileWaitingSchemas } = await import('../src/api/plugins/schema-compilation');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-start-'));
  try {
    const config = loadConfig({ CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: dataDir, CLOUDPLANE_LOG_LEVEL: 'silent', CLOUDPLANE_PROVIDER: 'simulated' });
    const before = process.cpuUsage();
    const service = await startService(config, createLogger('silent'));
    if (kind === 'eager') compileWaitingSchemas(service.app);
    const startCpuMs = cpuMs(before);
    const answer = await fetch(`${service.url}/api/v1/regions`, { headers: { authorization: `Bearer ${service.bootstrap?.token}` } });
    if (answer.status !== 200) throw new Error(`GET /api/v1/regions answered ${answer.status}`);
    await service.stop();
    return { processCpuMs: cpuMs(), startCpuMs };
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function main(rounds: number): void {
  const samples: Record<Kind, Sample[]> = { lazy: [], eager: [] };
  for (let round = 0; round < rounds; round++) {
    for (const kind of ['eager', 'lazy'] as const) {
      const out = execFileSync(process.execPath, [__filename, 'child', kind], { encoding: 'utf8' });
      samples[kind].push(JSON.parse(out.trim().split('\n').pop() ?? '') as Sample);
    }
  }
  const summary = (kind: Kind) => ({
    process_cpu_ms: median(samples[kind].map((s) => s.processCpuMs)),
    start_cpu_ms: median(samples[kind].map((s) => s.startCpuMs)),
  });
  const lazy = summary('lazy');
  const eager = summary('eager');
  const result = {
    at: new Date().toISOString(),
    rounds,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
    lazy,
    eager,
    ratio_process_cpu: lazy.process_cpu_ms / eager.process_cpu_ms,
    ratio_start_cpu: lazy.start_cpu_ms / eager.start_cpu_ms,
    samples,
  };
  const dir = path.join(__dirname, '..', '..', 'bench', 'results');
  const stamp = result.at.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  fs.writeFileSync(path.join(dir, `service-start-${stamp}.json`), JSON.stringify(result, null, 2) + '\n');
  const row = (name: string, s: { process_cpu_ms: number; start_cpu_ms: number }) =>
    `| ${name} | ${s.process_cpu_ms.toFixed(0)} | ${s.start_cpu_ms.toFixed(0)} |`;
  const table = [
    `# Service start (${result.at}, ${rounds} rounds, ${result.machine.cpus} CPUs, Node ${process.version})`,
    '',
    'Median CPU milliseconds of a fresh process that loads the service, starts it, answers one request and stops (bench/service-start.ts).',
    '',
    '| schemas | process CPU ms | start CPU ms |',
    '| --- | ---: | ---: |',
    row('compiled at start (before)', eager),
    row('compiled on first use (now)', lazy),
    '',
    `First use against at start: ${(100 * result.ratio_process_cpu).toFixed(0)} % of the process's CPU, ${(100 * result.ratio_start_cpu).toFixed(0)} % of the start's.`,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'service-start-latest.md'), table);
  console.log(table);
}

if (process.argv[2] === 'child') {
  startOnce(process.argv[3] === 'eager' ? 'eager' : 'lazy')
    .then((sample) => {
      console.log(JSON.stringify(sample));
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
} else {
  main(Number(process.argv[2] ?? 7));
}
