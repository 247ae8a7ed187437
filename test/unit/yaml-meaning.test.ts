/**
 * No enum or default changes meaning under YAML 1.1: every YAML file users apply or
 * install (crds/, the chart's CRDs and values, examples/) reads the same to kubectl and
 * helm (YAML 1.1) as to the `yaml` package (1.2). The chart's templates are covered
 * rendered, by test/integration/chart-yaml-meaning.test.ts. And the generator's writer
 * quotes whatever either version would misread.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { stringifyPortableYaml } from '../../src/lib/portable-yaml';
import { yamlMeaningDifferences } from '../helpers/yaml-meaning';

const REPO = path.resolve(__dirname, '../..');
const yamlIn = (dir: string) =>
  fs
    .readdirSync(path.join(REPO, dir))
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => path.join(dir, f));

const FILES = [...yamlIn('crds'), ...yamlIn('charts/cloudplane/crds'), 'charts/cloudplane/values.yaml', 'charts/cloudplane/Chart.yaml', ...yamlIn('examples')];

describe('YAML users apply', () => {
  it('covers the CRDs, the chart and the examples', () => {
    expect(yamlIn('crds').length).toBeGreaterThan(10);
    expect(yamlIn('charts/cloudplane/crds')).toHaveLength(yamlIn('crds').length);
    expect(yamlIn('examples').length).toBeGreaterThan(3);
  });

  it('finds what YAML 1.1 reads otherwise', () => {
    expect(yamlMeaningDifferences('enum: [on, off]\nmode: 0755\nport: 8080\nname: "on"\n')).toEqual([
      '[0].enum[0]: 1.1 reads boolean true, 1.2 reads string "on"',
      '[0].enum[1]: 1.1 reads boolean false, 1.2 reads string "off"',
      '[0].mode: 1.1 reads number 493, 1.2 reads number 755',
    ]);
  });

  it.each(FILES)('%s means the same under YAML 1.1 and 1.2', (file) => {
    expect(yamlMeaningDifferences(fs.readFileSync(path.join(REPO, file), 'utf8'))).toEqual([]);
  });

  it('the servers CRD offers the power states the example asks for, as strings', () => {
    const crd = parse(fs.readFileSync(path.join(REPO, 'crds/servers.cloudplane.dev.yaml'), 'utf8'), { version: '1.1' });
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec.properties.power_state.enum).toEqual(['on', 'off']);
    const example = parse(fs.readFileSync(path.join(REPO, 'examples/server.yaml'), 'utf8'), { version: '1.1' });
    expect(spec.properties.power_state.enum).toContain(example.spec.power_state);
  });
});

describe('stringifyPortableYaml', () => {
  // Strings YAML 1.1 reads as booleans, nulls, numbers or timestamps, and ones only 1.2 reads as numbers (0o17).
  const TRICKY = [
    'on',
    'Off',
    'YES',
    'no',
    'y',
    'N',
    'true',
    'False',
    'null',
    'Null',
    '~',
    '',
    '017',
    '0o17',
    '0x1F',
    '0b101',
    '1:20',
    '190:20:30.15',
    '1_000',
    '+1',
    '1e3',
    '.inf',
    '-.Inf',
    '.NaN',
    '2001-12-14',
    '2001-12-14t21:59:43.10-05:00',
    '<<',
    '=',
  ];

  it('writes every string so that 1.1 and 1.2 read it back as that string', () => {
    const value = { strings: TRICKY, keys: Object.fromEntries(TRICKY.filter((s) => s && s !== '<<').map((s) => [s, s])) };
    const text = stringifyPortableYaml(value);
    expect(yamlMeaningDifferences(text)).toEqual([]);
    expect(parse(text, { version: '1.1' })).toEqual(value);
    expect(parse(text, { version: '1.2' })).toEqual(value);
  });

  it('refuses a key a YAML 1.1 reader would take for a merge', () => {
    expect(() => stringifyPortableYaml({ '<<': 'x' })).toThrow(/merge/);
  });

  it('leaves real booleans, numbers and nulls, and ordinary strings, plain', () => {
    const text = stringifyPortableYaml({ a: true, b: 3, c: null, d: 1.5, e: 'running', f: 'ubuntu-24.04' });
    expect(text).toBe('a: true\nb: 3\nc: null\nd: 1.5\ne: running\nf: ubuntu-24.04\n');
  });
});
