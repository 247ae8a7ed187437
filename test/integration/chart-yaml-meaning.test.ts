/**
 * The chart's templates, rendered by helm, mean the same under YAML 1.1 (how helm and
 * kubectl read them) and YAML 1.2: no value a template writes plain changes meaning
 * (test/unit/yaml-meaning.test.ts covers the files that are YAML as they stand).
 */
import { findOrBuildHelm, render } from '../helpers/chart';
import { yamlMeaningDifferences } from '../helpers/yaml-meaning';

// make test builds helm (scripts/run-tests.sh); without it this fails, saying why, rather than skip.
const { helm, why } = findOrBuildHelm();
if (!helm) test('helm is available', () => expect(why).toBeUndefined());

const VALUE_SETS: Record<string, string[]> = {
  defaults: [],
  'NATS, no persistence': ['replicas=3', 'nats.url=nats://nats-0.nats:4222', 'persistence.enabled=false'],
  's3 bucket driver': ['drivers.bucket=s3', 's3.endpoint=http://minio.storage:9000', 's3.forcePathStyle=true'],
};

(helm ? describe : describe.skip)('helm template output', () => {
  it.each(Object.entries(VALUE_SETS))('with %s reads the same under YAML 1.1 and 1.2', (_name, sets) => {
    expect(yamlMeaningDifferences(render(sets))).toEqual([]);
  });
});
