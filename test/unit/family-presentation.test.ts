/**
 * Every family's presentation (how the CLI and the web console show it, declared in its
 * definition): each family of the registry has one that holds together, and a broken one
 * is refused naming the family and what is wrong.
 */
import { Value } from '@sinclair/typebox/value';
import { families } from '../../src/resources/registry';
import { presentationOf, presentationProblems, publishedFamily } from '../../src/resources/presentation-of';
import { FamilyPresentationSchema } from '../../src/resources/presentation';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { jobFamily } from '../../src/resources/job';
import { bucketFamily } from '../../src/resources/storage';
import type { AnyFamily } from '../../src/resources/family';

test('every family of the registry has a title, a singular, and columns, actions and delete options that fit it', () => {
  for (const family of families) {
    const shown = presentationOf(family);
    expect(Value.Check(FamilyPresentationSchema, shown)).toBe(true);
    // Named, so that a family that fails says which it is.
    expect({ family: family.name, title: shown.title.length > 0, singular: shown.singular.length > 0, problems: presentationProblems(family) }).toEqual({
      family: family.name,
      title: true,
      singular: true,
      problems: [],
    });
  }
});

test('a broken presentation is named with its family and what is wrong', () => {
  const broken: AnyFamily = {
    ...loadBalancerFamily,
    presentation: {
      title: ' ',
      singular: '',
      columns: [
        { key: 'id', label: 'ID' },
        { key: 'region', label: 'Region' },
        { key: 'region', label: 'Region again' },
        { key: 'colour', label: 'Colour' },
      ],
      actions: [{ name: 'paint', label: 'Paint', allowedIn: ['running', 'painted'] }],
    },
  };
  expect(presentationProblems(broken)).toEqual([
    "the load_balancer family's presentation has no title",
    "the load_balancer family's presentation has no singular",
    "the load_balancer family's presentation has the column region twice",
    "the load_balancer family's presentation has a column colour, which is no field of its record",
    "the load_balancer family's presentation offers the action paint in painted, which is none of its states",
  ]);
  const jobs: AnyFamily = { ...jobFamily, presentation: { deleteOptions: [{ query: 'force', label: 'Force' }] } };
  expect(presentationProblems(jobs)).toEqual(["the job family's presentation has delete options, but the family cannot be deleted"]);
});

test('what a family leaves out is derived from its definition', () => {
  const bare: AnyFamily = { ...bucketFamily, title: 'bucket policy', presentation: undefined };
  expect(presentationOf(bare)).toEqual({
    title: 'Bucket policies',
    singular: 'bucket policy',
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'name', label: 'Name' },
      { key: 'status', label: 'Status' },
    ],
    actions: [],
    // A family that guards its data on delete offers to delete it with it.
    deleteOptions: [{ query: 'force', label: 'Also delete what the bucket policy holds' }],
    console: true,
  });
  expect(presentationOf({ ...bare, standardRoutes: false, deletionGuard: undefined })).toMatchObject({ deleteOptions: [], console: false });
  expect(publishedFamily(bare)).toMatchObject({ name: 'bucket', path: 'object-storage', deletable: true, title: 'Bucket policies' });
  expect(publishedFamily(jobFamily)).toMatchObject({ name: 'job', deletable: false, title: 'Jobs', singular: 'job' });
});
