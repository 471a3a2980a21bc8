'use strict';
// Reading the files a user points the tools at, which may be hostile: only
// regular files (a FIFO would block forever, /dev/zero would grow memory
// without bound), opened without blocking, checked after opening (no window
// between a check and the open), and never larger than the caller allows.

const fs = require('fs');

// The bytes of the regular file at `path`. `what` says what the file is for
// in errors ("a model", "a .npy file"); `maxBytes` (optional) refuses a
// larger file before reading it. Every error is one line naming the file.
function readRegularFile(path, what, maxBytes = Infinity) {
  let fd;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    throw new Error(`${path}: cannot read (${e.code || e.message})`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() ? 'a character device'
        : st.isBlockDevice() ? 'a block device' : st.isSocket() ? 'a socket' : st.isDirectory() ? 'a directory' : 'not a file';
      throw new Error(`${path}: not a regular file (${kind}): ${what} must be a regular file`);
    }
    if (st.size > maxBytes) {
      throw new Error(`${path}: ${st.size} bytes, more than the ${maxBytes} bytes ${what} may have here`);
    }
    try {
      return fs.readFileSync(fd);
    } catch (e) {
      throw new Error(`${path}: cannot read (${e.code || e.message})`);
    }
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = { readRegularFile };
