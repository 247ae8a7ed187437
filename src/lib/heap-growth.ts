/**
 * How far V8 lets its heap grow past what a full collection left live. By default V8
 * chooses a factor of up to 4 from how fast it collects and how fast the program
 * allocates, so a burst of writes grows the old generation far past what stays live, and
 * a busy service keeps those pages. With 260,000 webhook deliveries kept (290 MB of heap
 * used; bench/delivery-records.ts, one run each, 2026-11-30):
 * - V8's own choice: 910 MB of heap, 1,093 MB of RSS;
 * - 50 % (the default): 485 MB of heap, 711 MB of RSS, the same CPU per delivery;
 * - 20 %: 381 MB of heap, 481 MB of RSS, but 10-36 % more CPU per delivery once piled up (a full
 *   collection of the whole heap every 60 MB promoted).
 *
 * V8 reads the flag each time it sets the heap's next limit, so it can be set once the
 * process runs; an explicit `node --heap-growing-percent=N` on the command line wins.
 */
import v8 from 'node:v8';

export function limitHeapGrowth(percent: number): void {
  if (percent <= 0 || process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent/.test(arg))) return;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
