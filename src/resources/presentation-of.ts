/**
 * A family's presentation with its defaults filled in, its check against the family, and
 * the form in which the OpenAPI document publishes it (presentation.ts has the shapes).
 */
import type { AnyFamily } from './family';
import { BASIC_COLUMNS, type DeleteOption, type FamilyPresentation, type PublishedFamily } from './presentation';
import { pluralOf } from '../lib/plural';

const capitalised = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}`;

/**
 * A family that guards its users' data (a bucket's objects) is deleted with that data only
 * when asked, by `?force=true` (FamilyDefinition.deletionGuard), so that is offered.
 */
const defaultDeleteOptions = (family: AnyFamily): DeleteOption[] =>
  family.deletionGuard && family.deletable !== false ? [{ query: 'force', label: `Also delete what the ${family.title} holds` }] : [];

/** The family's presentation: what it declares, and for the rest what its definition implies. */
export function presentationOf(family: AnyFamily): FamilyPresentation {
  const declared = family.presentation ?? {};
  return {
    title: declared.title ?? capitalised(pluralOf(family.title)),
    singular: declared.singular ?? family.title,
    columns: declared.columns ?? [...BASIC_COLUMNS],
    actions: declared.actions ?? [],
    deleteOptions: declared.deleteOptions ?? defaultDeleteOptions(family),
    // The generic pages need the generic routes.
    console: declared.console ?? family.standardRoutes === undefined,
  };
}

/** The family as the OpenAPI document's `x-cloudplane-families` lists it (docs/api.md). */
export function publishedFamily(family: AnyFamily): PublishedFamily {
  return { name: family.name, path: family.path, deletable: family.deletable !== false, idPrefix: family.idPrefix, ...presentationOf(family) };
}

/**
 * What is wrong with a family's presentation, each problem naming the family: an empty
 * title, a column that is no field of its record, an action offered in a state it does not
 * have, a delete option on a family that cannot be deleted.
 */
export function presentationProblems(family: AnyFamily): string[] {
  const shown = presentationOf(family);
  const of = `the ${family.name} family's presentation`;
  const problems: string[] = [];
  if (!shown.title.trim()) problems.push(`${of} has no title`);
  if (!shown.singular.trim()) problems.push(`${of} has no singular`);
  const fields = Object.keys(family.schemas.record.properties);
  const keys = new Set<string>();
  for (const column of shown.columns) {
    if (!fields.includes(column.key)) problems.push(`${of} has a column ${column.key}, which is no field of its record`);
    if (keys.has(column.key)) problems.push(`${of} has the column ${column.key} twice`);
    keys.add(column.key);
  }
  for (const action of shown.actions)
    for (const state of action.allowedIn)
      if (!family.states.includes(state)) problems.push(`${of} offers the action ${action.name} in ${state}, which is none of its states`);
  if (shown.deleteOptions.length > 0 && family.deletable === false) problems.push(`${of} has delete options, but the family cannot be deleted`);
  return problems;
}
