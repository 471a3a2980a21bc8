#!/usr/bin/env python3
"""safe_output.py text|json FILE: checks that what the tool printed is safe.

text: valid UTF-8 with no control character but newline, no C1 control, no
      line or paragraph separator, no bidirectional control.
json: the same, and the whole file parses with Python's strict json (raw
      control characters in strings refused); with --metadata the file holds
      `make-bad-models --names` lines and each metadata value must parse.
Prints the first problem and exits 1, or exits 0."""
import json
import sys
import unicodedata

UNSAFE = {chr(c) for c in range(0x20) if c != 0x0a} | {chr(c) for c in range(0x7f, 0xa0)} | \
    set("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def text_problem(data):
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        return f"not UTF-8: {e}"
    for i, ch in enumerate(text):
        if ch in UNSAFE:
            return f"raw {unicodedata.name(ch, hex(ord(ch)))} at character {i}: {text[max(0, i - 30):i + 10]!r}"
    return None


def main():
    mode, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    problem = text_problem(data) if mode != "metadata" else None
    try:
        if mode == "json":
            json.loads(data.decode("utf-8"))
        elif mode == "metadata":
            values = [line.split(b"\t", 1)[1] for line in data.split(b"\n") if line.startswith(b"metadata ")]
            if not values:
                problem = "no metadata"
            for v in values:
                problem = problem or text_problem(v)
                json.loads(v.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        problem = problem or f"does not parse: {e}"
    if problem:
        print(problem)
        sys.exit(1)


main()
