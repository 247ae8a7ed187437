/**
 * Runs dependency-cruiser's `cruise` over src/ with the rules of .dependency-cruiser.cjs
 * (the layers of docs/layers.md) and prints its violations as JSON on stdout:
 * [{ from, to, rule, cycle? }]. dependency-cruiser ships only ES modules, which Jest's
 * CommonJS runtime cannot load, so test/unit/layers.test.ts runs this in a Node process
 * of its own. Run from the repository root.
 */
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const options = await extractDepcruiseOptions('./.dependency-cruiser.cjs');
const tsConfig = extractTSConfig('tsconfig.json');
const { output } = await cruise(['src'], options, undefined, { tsConfig });
const violations = output.summary.violations.map((v) => ({
  from: v.from,
  to: v.to,
  rule: v.rule.name,
  ...(v.cycle ? { cycle: v.cycle.map((step) => (typeof step === 'string' ? step : step.name)) } : {}),
}));
process.stdout.write(`${JSON.stringify({ modules: output.summary.totalCruised, violations })}\n`);
