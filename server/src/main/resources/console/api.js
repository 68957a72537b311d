// Every call the console makes to the server: same origin, JSON, with the tab's bearer token.
// The token is typed once per tab and kept in sessionStorage (gone when the tab closes); a 401
// answer asks for it again (see app.js). Errors carry the server's JSON error code and message.

const TOKEN_KEY = 'troupe-console-token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) {
    sessionStorage.setItem(TOKEN_KEY, value);
  } else {
    sessionStorage.removeItem(TOKEN_KEY);
  }
}

/** A failed call: the HTTP status and the server's error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

function headers() {
  const sent = { Accept: 'application/json' };
  const current = token();
  if (current) {
    sent.Authorization = `Bearer ${current}`;
  }
  return sent;
}

async function request(path) {
  const response = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (!response.ok) {
    let code = 'error';
    let message = response.statusText;
    try {
      const body = await response.json();
      code = body.error || code;
      message = body.message || message;
    } catch (ignored) {
      // Not JSON: the status says enough.
    }
    const error = new ApiError(response.status, code, message);
    if (response.status === 401) {
      window.dispatchEvent(new CustomEvent('troupe-unauthorized', { detail: error }));
    }
    throw error;
  }
  return response;
}

/**
 * GET of a JSON resource. Versions and transaction ids are 64-bit integers (hybrid logical clock
 * timestamps, about 2^56), beyond the integers a JavaScript number holds exactly (2^53): such a
 * number is kept as the string of its digits, read from the JSON's own text, so that a version
 * sent back (?at=, ?before=) is the version the server gave.
 */
export async function getJson(path) {
  const text = await (await request(path)).text();
  return JSON.parse(text, (key, value, context) => (
    typeof value === 'number' && !Number.isSafeInteger(value) && context
      && /^-?\d+$/.test(context.source) ? context.source : value));
}

/** GET of a text resource (/metrics). */
export async function getText(path) {
  return (await request(path)).text();
}

/** A path segment, escaped (entity ids may hold characters a URL gives meaning to). */
export function segment(text) {
  return encodeURIComponent(text);
}
