/** Catalogue codes of SecretStoreError. */
export type SecretStoreErrorCode =
  | 'ERR_SECRET_CONFIG'
  | 'ERR_SECRET_NAME'
  | 'ERR_SECRET_VALUE'
  | 'ERR_SECRET_FILE_UNSAFE'
  | 'ERR_SECRET_FILE_CORRUPT'
  | 'ERR_SECRET_KEYRING_MODULE'
  | 'ERR_SECRET_KEYRING_UNAVAILABLE'
  | 'ERR_SECRET_KEYRING_FAILED';

/** A secret store that cannot be used, with what to do about it. Its message never holds a secret value. */
export class SecretStoreError extends Error {
  override readonly name = 'SecretStoreError';
  /** Catalogue code. */
  readonly code: SecretStoreErrorCode;

  constructor(code: SecretStoreErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Throws unless `name` can name a secret in every backend: a non-empty string without NUL. */
export function checkSecretName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || name.includes('\0')) {
    throw new SecretStoreError('ERR_SECRET_NAME', `a secret name must be a non-empty string without NUL, got ${JSON.stringify(name)}`);
  }
}

/** Throws unless `value` can be stored in every backend: a non-empty string without NUL (the value itself is never shown). */
export function checkSecretValue(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value === '' || value.includes('\0')) {
    const what = typeof value !== 'string' ? `a ${typeof value}` : value === '' ? 'an empty string' : 'a string with NUL';
    throw new SecretStoreError(
      'ERR_SECRET_VALUE',
      `secret "${name}": the value must be a non-empty string without NUL, got ${what}; use delete() to remove a secret`,
    );
  }
}
