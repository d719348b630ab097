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
 * @throws {ServerConnection.ResponseError} When the server answers with a
 *   non-2xx status; its `message` is the server's `message` field.
 */
export async function requestAPI(
  endPoint: string,
  init: RequestInit,
  settings: ServerConnection.ISettings
): Promise<Response> {
  const url = xcshUrl(settings, endPoint);
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return response;
}
