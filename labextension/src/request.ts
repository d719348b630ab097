/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/**
 * The url path of the jupyter-xcsh REST API, relative to the server's base url.
 */
export const XCSH_API_PATH = 'api/xcsh';

/**
 * Build the full url of a jupyter-xcsh endpoint.
 *
 * @param settings - The server settings, whose `baseUrl` prefixes the url.
 * @param endPoint - The endpoint below `api/xcsh`, e.g. `notebook`.
 * @returns The absolute url of the endpoint.
 */
export function xcshUrl(
  settings: ServerConnection.ISettings,
  endPoint = ''
): string {
  return URLExt.join(settings.baseUrl, XCSH_API_PATH, endPoint);
}

/**
 * Call a jupyter-xcsh endpoint and return its successful response.
 *
 * @param endPoint - The endpoint below `api/xcsh`, already URL-encoded,
 *   optionally with a query string.
 * @param init - The request options (method, body, headers).
 * @param settings - The server settings (base url, token, fetch).
 * @returns The response, whose status is 2xx; the caller reads its body.
 *
 * @throws {ServerConnection.NetworkError} When the server cannot be reached.
 * @throws {XcshResponseError} When the server answers with a non-2xx status;
 *   its `message`, `reason` and `details` are the error body's.
 */
export async function requestAPI(
  endPoint: string,
  init: RequestInit,
  settings: ServerConnection.ISettings
): Promise<Response> {
  const url = xcshUrl(settings, endPoint);
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    throw await XcshResponseError.create(response);
  }
  return response;
}

/**
 * A non-2xx answer of the jupyter-xcsh API, with its error body
 * (`{"message", "reason"?, "details"?}`, see `Error` in `rest-api.yml`).
 */
export class XcshResponseError extends ServerConnection.ResponseError {
  /**
   * Create the error of a response.
   *
   * @param response - The response; its body is the error's.
   * @param message - The server's message.
   * @param reason - The short machine-readable reason, e.g. `stale_cell`.
   * @param details - Structured details, e.g. the cell as it is now.
   */
  constructor(
    response: Response,
    message: string,
    readonly reason: string | null = null,
    readonly details: unknown = null
  ) {
    super(response, message);
  }

  /**
   * Read the error body of a response (any body: a proxy may answer HTML).
   */
  static async create(response: Response): Promise<XcshResponseError> {
    let body: unknown = null;
    try {
      body = JSON.parse(await response.text());
    } catch {
      // Not JSON: the status says what went wrong.
    }
    const fields = (
      typeof body === 'object' && body !== null ? body : {}
    ) as Record<string, unknown>;
    const message =
      typeof fields.message === 'string' && fields.message !== ''
        ? fields.message
        : `Invalid response: ${response.status} ${response.statusText}`;
    const reason = typeof fields.reason === 'string' ? fields.reason : null;
    return new XcshResponseError(
      response,
      message,
      reason,
      fields.details ?? null
    );
  }
}
