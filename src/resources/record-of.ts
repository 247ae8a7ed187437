/**
 * A resource's record, as every answer, event and watch shows it. Made by the family's
 * toRecord from the stored spec, which holds every field the spec schema requires once the
 * create rules have run (they fill in the defaults). A manifest the rules refused
 * (controllers/adoption.ts) keeps the spec it was applied with, so it may lack some: those
 * are shown with a value of their type (the schema's default, else false, 0, '', [], null
 * where nullable, the first of an enum), never written back, so the user's fix of the
 * manifest still meets the rules' own defaults. Without them its record could not be
 * serialised and the whole list of its family would fail.
 */
import { Value } from '@sinclair/typebox/value';
import type { BaseStatus, FamilyDefinition, Resource } from './family';

export function recordOf<Spec, Status extends BaseStatus>(family: FamilyDefinition<Spec, Status>, resource: Resource<Spec, Status>): Record<string, unknown> {
  return family.toRecord(withRequiredSpecFields(family, resource));
}

function withRequiredSpecFields<Spec, Status extends BaseStatus>(
  family: FamilyDefinition<Spec, Status>,
  resource: Resource<Spec, Status>,
): Resource<Spec, Status> {
  const schema = family.schemas.spec;
  const stored: object = resource.spec ?? {};
  const missing = (schema.required ?? []).filter((field) => !(field in stored));
  if (missing.length === 0) return resource;
  const placeholders: Record<string, unknown> = {};
  for (const field of missing) {
    try {
      placeholders[field] = Value.Create(schema.properties[field]);
    } catch {
      // No value of its type can be made (a string with a pattern and no default): left out.
    }
  }
  return { ...resource, spec: { ...resource.spec, ...placeholders } };
}
