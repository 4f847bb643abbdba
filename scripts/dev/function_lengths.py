#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (TigerStyle: at most ~70 lines).

Usage: scripts/dev/function_lengths.py [--limit N] [PATH ...]   (default: the whole tree)
Exits 1 when a function is longer than the limit, so CI can hold the line.

A function is a brace-enclosed body opened at namespace or class scope whose
head (the text since the previous ';', '{' or '}') has a parameter list and is
not a namespace, class, struct, union, enum or initialiser. Its length counts
from the first line of its head to its closing brace. Lambdas and local classes
count toward the function that holds them. Comments, string and character
literals are skipped, so braces inside them do not count.
"""
import argparse
import os
import re
import sys

SOURCE_DIRS_SKIPPED = {"build", ".git", "fuzz-out", "third_party"}
SCOPE_HEAD = re.compile(r"\b(namespace|class|struct|union|enum)\b")


def strip_code(text):
    """Returns text with comments and literals blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            k = text.find("(", i)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank_preprocessor(code):
    """Blanks preprocessor lines (and their continuations): '#if defined(X)'
    has a parameter list and no body."""
    lines = code.split("\n")
    continued = False
    for k, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            lines[k] = " " * len(line)
    return "\n".join(lines)


def long_functions(path, limit):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_preprocessor(strip_code(f.read()))
    found = []
    stack = []  # one entry per open brace: True when it opens a function body
    head_start = 0
    for i, c in enumerate(code):
        if c in ";{}":
            if c == "{":
                head = code[head_start:i]
                in_function = any(stack)
                is_function = (not in_function and ")" in head
                               and not SCOPE_HEAD.search(head.split("(")[0])
                               and not head.rstrip().endswith("="))
                if is_function:
                    first = len(head) - len(head.lstrip())
                    stack.append((head_start + first, head))
                else:
                    stack.append(in_function)
            elif c == "}" and stack:
                top = stack.pop()
                if isinstance(top, tuple):
                    start_line = code.count("\n", 0, top[0]) + 1
                    end_line = code.count("\n", 0, i) + 1
                    length = end_line - start_line + 1
                    if length > limit:
                        name = re.findall(r"([~\w:]+)\s*\(", top[1])
                        found.append((length, start_line, name[0] if name else "?"))
            head_start = i + 1
    return found


def sources(paths):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SOURCE_DIRS_SKIPPED)
            for name in sorted(files):
                if name.endswith((".cc", ".h", ".cu", ".cpp")):
                    yield os.path.join(folder, name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=70)
    parser.add_argument("paths", nargs="*", default=["."])
    args = parser.parse_args()
    total = 0
    for path in sources(args.paths):
        for length, line, name in long_functions(path, args.limit):
            print(f"{os.path.relpath(path)}:{line}: {name} is {length} lines")
            total += 1
    print(f"{total} function(s) over {args.limit} lines")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
