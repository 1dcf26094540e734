import { Type, type Static } from 'typebox';
import { HeatListLimit, JsonValue, JsonObject, Name, Timestamp, Uuid } from './common.ts';

/** The parameter types Heat knows for config inputs and outputs. */
export const PARAMETER_TYPES = ['String', 'Number', 'CommaDelimitedList', 'Json', 'Boolean'] as const;
export const ParameterType = Type.Union([
  Type.Literal('String'),
  Type.Literal('Number'),
  Type.Literal('CommaDelimitedList'),
  Type.Literal('Json'),
  Type.Literal('Boolean'),
]);
export type ParameterType = (typeof PARAMETER_TYPES)[number];

/**
 * A boolean key of an input or output item: a boolean, or a string Heat reads as one (`true` or
 * `false` in any case; the server refuses any other string with ERR_CONFIG_INVALID). Null is absent.
 */
const ItemBoolean = Type.Union([Type.Boolean(), Type.String({ maxLength: 255 }), Type.Null()]);

/**
 * A whole number stored as its decimal text where Heat takes text (Heat runs int() through str()).
 * Bounded to what a JSON number keeps exactly, so the text is the digits sent.
 */
const WholeNumberAsText = Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });

/**
 * An item's `description` as POST takes it: a string, or a whole number or a boolean, which Heat's
 * String property turns into text (`5` → `"5"`, `true` → `"True"`); the server stores the text. A
 * fraction is refused, as Heat refuses it.
 */
const HeatItemDescription = Type.Union([Type.String({ maxLength: 4096 }), WholeNumberAsText, Type.Boolean(), Type.Null()]);

/**
 * An input declared by a software config (Heat: name required, type default String). A key given
 * as null is taken as absent, as Heat drops null-valued keys before it applies defaults.
 */
export const ConfigInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
    type: Type.Optional(Type.Union([ParameterType, Type.Null()])),
    default: Type.Optional(JsonValue),
    replace_on_change: Type.Optional(ItemBoolean),
    value: Type.Optional(JsonValue),
  },
  { additionalProperties: false },
);
export type ConfigInput = Static<typeof ConfigInput>;

/**
 * An output declared by a software config; `error_output` marks an output that fails the deployment.
 * A key given as null is taken as absent (Heat).
 */
export const ConfigOutput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
    type: Type.Optional(Type.Union([ParameterType, Type.Null()])),
    error_output: Type.Optional(ItemBoolean),
  },
  { additionalProperties: false },
);
export type ConfigOutput = Static<typeof ConfigOutput>;

/** A ConfigInput as POST /software_configs takes it: its description may be a whole number or a boolean. */
export const ConfigInputBody = Type.Object(
  { ...ConfigInput.properties, description: Type.Optional(HeatItemDescription) },
  { additionalProperties: false },
);
export type ConfigInputBody = Static<typeof ConfigInputBody>;

/** A ConfigOutput as POST /software_configs takes it: its description may be a whole number or a boolean. */
export const ConfigOutputBody = Type.Object(
  { ...ConfigOutput.properties, description: Type.Optional(HeatItemDescription) },
  { additionalProperties: false },
);
export type ConfigOutputBody = Static<typeof ConfigOutputBody>;

/** `config` is script text, or an object for structured configs and components. */
export const ConfigBody = Type.Union([Type.String({ maxLength: 4 * 1024 * 1024 }), JsonObject, Type.Null()]);

/**
 * POST /v1/{project}/software_configs body; every key optional, as in Heat. A whole-number `name`
 * is stored as its text, as Heat's string field stores it (`2024` → `"2024"`).
 */
export const SoftwareConfigCreate = Type.Object(
  {
    name: Type.Optional(Type.Union([Name, WholeNumberAsText, Type.Null()])),
    group: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
    config: Type.Optional(ConfigBody),
    inputs: Type.Optional(Type.Union([Type.Array(ConfigInputBody, { maxItems: 1000 }), Type.Null()])),
    outputs: Type.Optional(Type.Union([Type.Array(ConfigOutputBody, { maxItems: 1000 }), Type.Null()])),
    options: Type.Optional(Type.Union([JsonObject, Type.Null()])),
  },
  { additionalProperties: false },
);
export type SoftwareConfigCreate = Static<typeof SoftwareConfigCreate>;

/** Normalised input as stored and shown: null-valued keys dropped, type defaulted. */
export const StoredInput = Type.Object({
  name: Type.String(),
  type: ParameterType,
  description: Type.Optional(Type.String()),
  default: Type.Optional(JsonValue),
  replace_on_change: Type.Optional(Type.Boolean()),
  value: Type.Optional(JsonValue),
});
export type StoredInput = Static<typeof StoredInput>;

/** Normalised output as stored and shown: `error_output` always present. */
export const StoredOutput = Type.Object({
  name: Type.String(),
  type: ParameterType,
  description: Type.Optional(Type.String()),
  error_output: Type.Boolean(),
});
export type StoredOutput = Static<typeof StoredOutput>;

/** A software config as returned by GET /software_configs/{id}. */
export const SoftwareConfig = Type.Object({
  id: Uuid,
  name: Type.Union([Type.String(), Type.Null()]),
  group: Type.String(),
  config: ConfigBody,
  inputs: Type.Array(StoredInput),
  outputs: Type.Array(StoredOutput),
  options: JsonObject,
  creation_time: Timestamp,
});
export type SoftwareConfig = Static<typeof SoftwareConfig>;

/** A software config as listed (Heat lists only id, name, group and creation_time). */
export const SoftwareConfigSummary = Type.Object({
  id: Uuid,
  name: Type.Union([Type.String(), Type.Null()]),
  group: Type.String(),
  creation_time: Timestamp,
});
export type SoftwareConfigSummary = Static<typeof SoftwareConfigSummary>;

/** GET /software_configs query: `limit` as Heat takes it (no maximum), `marker` the last id seen. */
export const ConfigListQuery = Type.Object(
  {
    limit: Type.Optional(HeatListLimit),
    marker: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type ConfigListQuery = Static<typeof ConfigListQuery>;
