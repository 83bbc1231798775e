#!/usr/bin/env python3
"""Checks the book's links (run by scripts/docs.sh, after mdbook built docs/ into docs/book).

- Every relative link in docs/src/**/*.md and README.md resolves to a file or directory of the
  repository, and its #anchor, when it points into docs/src, to a heading or an explicit
  `<a id="…">` of that page (ids computed as mdBook computes them).
- Every page under docs/src is in SUMMARY.md (mdBook builds only those).
- With the built book present, every id computed here for a page is in its HTML (so this
  script's idea of mdBook's ids is checked too).
- README.md stays a landing page: at most 10 KiB.
- Every `SPEC §N` cited in the code (src, crates, tests, benches, examples, scripts, helm) names
  a section of docs/src/semantics/spec.md (its `<a id="sN">` anchors); ranges (§6–8) name each.

Standard library only. Exit 1 listing every problem.
"""
import html
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "docs" / "src"
BOOK = ROOT / "docs" / "book"
SPEC = SRC / "semantics" / "spec.md"
CODE_DIRS = ["src", "crates", "tests", "benches", "examples", "scripts", "helm"]

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
EXPLICIT_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")
HTML_ID = re.compile(r"""\bid=["']([^"']+)["']""")
SPEC_CITE = re.compile(r"SPEC\s+((?:§\s?\d+(?:\.\d+)?(?:\s?[–-]\s?§?\d+(?:\.\d+)?)?(?:,\s?|\s(?:and|or)\s)?)+)")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)?)(?:\s?[–-]\s?§?(\d+)(?:\.\d+)?)?")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, inline code spans blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[:3]
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """mdBook 0.4's id of a heading: its rendered text without tags, then normalize_id."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside code spans: inline HTML tags are dropped
        parts[i] = re.sub(r"<[^>]+>", "", parts[i]).replace("*", "")
    text = "".join(parts)
    for ch in "<>&'\"":  # &lt; &gt; &amp; &#39; &quot; are dropped by mdBook
        text = text.replace(ch, "")
    text = text.strip().lstrip("#").strip()
    out = []
    for ch in text:
        if ch.isalnum() or ch in "_-":
            out.append(ch.lower() if ch.isascii() else ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(page):
    """The ids of a page's headings (duplicates numbered as mdBook does) and explicit ids."""
    ids, seen = set(), {}
    text = page.read_text(encoding="utf-8")
    fence = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if marker:
            fence = None if fence else marker.group(1)[:3]
            continue
        if fence:
            continue
        ids.update(EXPLICIT_ID.findall(line))
        h = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def check_links(pages, problems):
    cache = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for n, line in prose_lines(text):
            for target in LINK.findall(line) + IMAGE.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                where = f"{page.relative_to(ROOT)}:{n}"
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                if not dest.exists():
                    problems.append(f"{where}: {target}: no such file")
                    continue
                if not anchor:
                    continue
                if dest.suffix != ".md" or SRC not in dest.parents:
                    problems.append(f"{where}: {target}: anchors are checked only into docs/src pages")
                    continue
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if html.unescape(anchor) not in cache[dest]:
                    problems.append(f"{where}: {target}: no anchor #{anchor} in {dest.relative_to(ROOT)}")


def check_summary(pages, problems):
    summary = (SRC / "SUMMARY.md").read_text(encoding="utf-8")
    listed = {(SRC / t).resolve() for t in LINK.findall(summary)}
    for page in pages:
        if page.parent == ROOT or page.name == "SUMMARY.md":
            continue
        if page not in listed:
            problems.append(f"{page.relative_to(ROOT)}: not in docs/src/SUMMARY.md")


def check_built(pages, problems):
    if not BOOK.is_dir():
        return
    for page in pages:
        if SRC not in page.parents or page.name == "SUMMARY.md":
            continue
        built = BOOK / page.relative_to(SRC).with_suffix(".html")
        if not built.exists():
            problems.append(f"{page.relative_to(ROOT)}: not built ({built.relative_to(ROOT)} missing)")
            continue
        ids = set(HTML_ID.findall(built.read_text(encoding="utf-8")))
        for a in sorted(anchors(page) - ids):
            problems.append(f"{page.relative_to(ROOT)}: id {a!r} computed here is not in {built.relative_to(ROOT)}")


def check_spec(problems):
    sections = {a[1:] for a in anchors(SPEC) if re.fullmatch(r"s\d+(\.\d+)?", a)}
    cited = 0
    for d in CODE_DIRS:
        for f in sorted((ROOT / d).rglob("*")):
            if not f.is_file() or f.suffix not in {".rs", ".sh", ".py", ".yaml", ".txt", ".toml", ".env", ".md", ".json"}:
                continue
            for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
                for cite in SPEC_CITE.finditer(line):
                    for first, last in SECTION.findall(cite.group(1)):
                        names = [first]
                        if last:
                            names = [str(i) for i in range(int(first.split(".")[0]), int(last) + 1)]
                        for s in names:
                            cited += 1
                            if s not in sections:
                                problems.append(f"{f.relative_to(ROOT)}:{n}: SPEC §{s} is not a section of {SPEC.relative_to(ROOT)}")
    return cited


def main():
    pages = sorted(p.resolve() for p in SRC.rglob("*.md")) + [ROOT / "README.md"]
    problems = []
    check_links(pages, problems)
    check_summary(pages, problems)
    check_built(pages, problems)
    cited = check_spec(problems)
    size = (ROOT / "README.md").stat().st_size
    if size > 10 * 1024:
        problems.append(f"README.md: {size} bytes; a landing page stays within 10 KiB (move the rest into the book)")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"docs: {len(pages)} pages, links and anchors resolve; {cited} SPEC § citations name sections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
