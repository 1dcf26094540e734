/** Body limits per kind of endpoint, in bytes. */
export const BODY_LIMITS = {
  /** Registering a server, heartbeats and other small bodies. */
  small: 16 * 1024,
  /** A deployment (input values may carry files). */
  deployment: 1024 * 1024,
  /** A software config: script text up to 4 MiB plus its JSON envelope. */
  config: 5 * 1024 * 1024,
  /** A signal: Heat's max_json_body_size. */
  signal: 1024 * 1024,
} as const;
