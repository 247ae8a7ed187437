/**
 * How a resource family is shown, as plain data: the CLI's tables and the web console's
 * pages both read it, the console over HTTP (the OpenAPI document's `x-cloudplane-families`,
 * docs/api.md), so these are TypeBox schemas, and a family declares the part that differs
 * from the defaults in its own definition (FamilyDefinition.presentation; the defaults are
 * in presentation-of.ts).
 */
import { Type, Static } from '@sinclair/typebox';

export const PresentationColumnSchema = Type.Object({
  /** A field of the family's record. */
  key: Type.String({ description: 'A field of the record.' }),
  label: Type.String({ description: 'The column heading.' }),
  secondary: Type.Optional(Type.Boolean({ description: 'Left out where space is short (a phone-sized screen).' })),
  shownIn: Type.Optional(
    Type.Union([Type.Literal('cli'), Type.Literal('console')], { description: 'Shown only by the CLI or only by the console; by both when absent.' }),
  ),
});
export type PresentationColumn = Static<typeof PresentationColumnSchema>;

/** What nearly every record has, and so what a list shows unless its family says more. */
export const BASIC_COLUMNS: readonly PresentationColumn[] = [
  { key: 'id', label: 'ID' },
  { key: 'name', label: 'Name' },
  { key: 'status', label: 'Status' },
];

/** The basic columns and the region, for the families that live in one. */
export const REGIONAL_COLUMNS: readonly PresentationColumn[] = [...BASIC_COLUMNS, { key: 'region', label: 'Region' }];

export const PresentationActionSchema = Type.Object({
  name: Type.String({ description: 'The action: `POST /api/v1/<path>/{id}/<name>`, without a body.' }),
  label: Type.String({ description: "The button's label." }),
  allowedIn: Type.Array(Type.String(), { description: 'The states in which the API allows the action.' }),
});
export type PresentationAction = Static<typeof PresentationActionSchema>;

export const DeleteOptionSchema = Type.Object({
  query: Type.String({ description: 'Sent as `?<query>=true` on the DELETE.' }),
  label: Type.String({ description: 'What the choice does, in the delete confirmation.' }),
});
export type DeleteOption = Static<typeof DeleteOptionSchema>;

export const FamilyPresentationSchema = Type.Object({
  title: Type.String({ description: 'The plural heading: `Load balancers`.' }),
  singular: Type.String({ description: 'One of them in a sentence: `load balancer`.' }),
  columns: Type.Array(PresentationColumnSchema, { description: 'The columns of a list, in order.' }),
  actions: Type.Array(PresentationActionSchema, { description: 'The body-less actions a person is offered on a resource.' }),
  deleteOptions: Type.Array(DeleteOptionSchema, { description: 'Choices offered with a delete.' }),
  console: Type.Boolean({ description: 'Whether the web console shows the family with its generic pages (list, detail, create, change).' }),
});
export type FamilyPresentation = Static<typeof FamilyPresentationSchema>;

/** What a family declares: any part of its presentation, the rest defaulted. */
export type PresentationDeclaration = Partial<FamilyPresentation>;

/** A family as the OpenAPI document publishes it: its names and what a client may do, and its presentation. */
export const PublishedFamilySchema = Type.Composite([
  Type.Object({
    name: Type.String({ description: 'The family: event category and error-code prefix, `load_balancer`.' }),
    path: Type.String({ description: 'Its path under /api/v1: `load-balancers`.' }),
    deletable: Type.Boolean({ description: 'Whether its resources can be deleted (DELETE).' }),
    idPrefix: Type.String({
      description: 'What its ids start with before the `_`: `lb` for `lb_...`, so a field holding such an id is known to name one of its resources.',
    }),
  }),
  FamilyPresentationSchema,
]);
export type PublishedFamily = Static<typeof PublishedFamilySchema>;
