'use strict';
// Text from a file (a name, a header, a reason) shown in a one-line message:
// control characters escaped as in JSON, and cut at `max` characters, so
// that a hostile file can neither split the line nor flood it.
function printable(text, max = 200) {
  const s = String(text);
  const cut = s.length > max ? `${s.slice(0, max)}...` : s;
  return cut.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => JSON.stringify(c).slice(1, -1));
}

module.exports = { printable };
