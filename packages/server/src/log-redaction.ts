const SECRET_PARAMS = /([?&](?:token|Signature|X-Amz-Signature|AWSAccessKeyId|X-Amz-Credential|temp_url_sig)=)[^&]*/gi;

/** A URL with its secret query parameters replaced by `***`, fit for logs. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1***');
}
