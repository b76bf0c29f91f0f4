// HTTP-dates (RFC 9110 §5.6.7) in all three forms a recipient must accept. Date.parse is not
// used: what it accepts differs between engines, and it takes things that are not HTTP-dates.

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = '(?:mon|tue|wed|thu|fri|sat|sun)';
const LONG_DAYS = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const MONTH = '([a-z]{3})';

// Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE = new RegExp(`^${DAYS}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`, 'i');
// Sunday, 06-Nov-94 08:49:37 GMT
const RFC850_DATE = new RegExp(`^${LONG_DAYS}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
// Sun Nov  6 08:49:37 1994
const ASCTIME_DATE = new RegExp(`^${DAYS} ${MONTH} (\\d{2}| \\d) ${TIME} (\\d{4})$`, 'i');

/**
 * Epoch milliseconds of an HTTP-date, or `undefined` if `text` is not one.
 *
 * @param {string | null | undefined} text the field value
 * @param {number} [now] epoch ms, to place an rfc850-date's two-digit year
 * @returns {number | undefined}
 */
export function parseHttpDate(text, now = Date.now()) {
  if (typeof text !== 'string' || text.length > 64) return undefined;
  const value = text.trim();
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(+m[3], m[2], +m[1], m[4], m[5], m[6]);
  m = RFC850_DATE.exec(value);
  if (m) return utc(twoDigitYear(+m[3], now), m[2], +m[1], m[4], m[5], m[6]);
  m = ASCTIME_DATE.exec(value);
  if (m) return utc(+m[6], m[1], +m[2].trim(), m[3], m[4], m[5]);
  return undefined;
}

// RFC 9110: a two-digit year that appears more than 50 years in the future is the most recent
// past year with the same last two digits.
function twoDigitYear(yy, now) {
  const current = new Date(now).getUTCFullYear();
  let year = current - (current % 100) + yy;
  if (year > current + 50) year -= 100;
  return year;
}

function utc(year, monthName, day, hours, minutes, seconds) {
  const month = MONTHS.indexOf(monthName.toLowerCase());
  const [h, m, s] = [+hours, +minutes, +seconds];
  if (month < 0 || day < 1 || h > 23 || m > 59 || s > 60) return undefined;
  // A leap second (60) is kept as the next second's start.
  const time = utcMillis(year, month, day, h, m) + s * 1000;
  // 31 Feb rolls over into March: a date that moved is not a date.
  if (new Date(utcMillis(year, month, day)).getUTCDate() !== day) return undefined;
  return time;
}

/** Epoch ms of a UTC date and time. (Date.UTC would read the years 0 to 99 as 1900 to 1999.) */
function utcMillis(year, month, day, hours = 0, minutes = 0) {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(hours, minutes, 0, 0);
  return date.getTime();
}

// 2026-11-21T17:00:00Z, with optional fraction and offset: what some servers put in reset fields.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Epoch milliseconds of an RFC 3339 timestamp, or `undefined`.
 *
 * @param {string} text
 * @returns {number | undefined}
 */
export function parseRfc3339(text) {
  const m = RFC3339.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day, h, min, s] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || h > 23 || min > 59 || s > 60) return undefined;
  if (new Date(utcMillis(year, month - 1, day)).getUTCDate() !== day) return undefined;
  const fraction = m[7] ? Math.floor(Number(m[7]) * 1000) : 0;
  let offset = 0;
  if (m[8].length > 1) {
    const sign = m[8][0] === '-' ? -1 : 1;
    const [oh, om] = m[8].slice(1).split(':').map(Number);
    if (oh > 23 || om > 59) return undefined;
    offset = sign * (oh * 60 + om) * 60_000;
  }
  return utcMillis(year, month - 1, day, h, min) + s * 1000 + fraction - offset;
}
