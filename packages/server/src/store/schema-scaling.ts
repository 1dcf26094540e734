/** Tables of migration 0003_scaling (scaling groups, members, policies, actuator deliveries), as Kysely sees them. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ScalingTables {}
