/** An error the original reports as a ConfigException: logged, then exit 1. */
export class ApplyConfigError extends Error {
  override name = 'ApplyConfigError';
}
