"""Build the corpus of the extra training questions (tests/benchmarks/extra_questions.jsonl): twelve Debian
documentation packages that the dev set does not use, unpacked and rendered to text the way the dev set's
corpus is (man pages at 100 columns without hyphenation or justification, HTML and plain text as shipped).

    python tests/benchmarks/extra_corpus.py OUTDIR

Needs apt (the packages are fetched with `apt-get download`, cached in $EXTRA_CORPUS_WORK or
/tmp/extra-corpus-work) and man-db. The questions were written against the versions pinned below; another
version builds with a warning, and its answers may have moved.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGES = {
    "unbound": "1.17.1-2+deb12u4",
    "radvd": "1:2.19-1+b1",
    "bird2": "2.0.12-7",
    "strongswan-starter": "5.9.8-5+deb12u6",
    "tinyproxy": "1.11.1-2.1+deb12u1",
    "knot-doc": "3.2.6-1",
    "frr-doc": "8.4.4-1.1~deb12u2",
    "haproxy-doc": "2.6.12-1+deb12u4",
    "bind9-doc": "1:9.18.49-1~deb12u3",
    "ntpsec-doc": "1.2.2+dfsg1-1+deb12u1",
    "iptables": "1.8.9-2",
    "ifupdown": "0.8.41",
}
# never documents: licences, change logs, credits, assets, generated indexes, programs
SKIP_NAMES = {"copyright", "AUTHORS", "AUTHOR", "search.html", "genindex.html", "py-modindex.html"}
SKIP_PREFIXES = ("changelog", "COPYRIGHT", "CONTRIBUTORS", "CREDITS", "SPONSORS")
SKIP_SUFFIXES = (
    *(".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".css", ".js", ".pdf"),
    *(".p12", ".key", ".crt", ".pem", ".tar.gz", ".tgz", ".zip", ".sh", ".sh.gz", ".pl", ".py", ".init"),
    *("objects.inv", ".buildinfo"),
)
SKIP_DIRS = ("/_sources/", "/_static/", "/_images/", "/_downloads/", "/sample-keys/", "/sample-scripts/")


def skipped(rel: str) -> bool:
    """Whether an unpacked file (path relative to the package root) is left out."""
    if not rel.startswith(("usr/share/doc/", "usr/share/man/man")):
        return True
    name = rel.rsplit("/", 1)[-1]
    return (
        name in SKIP_NAMES
        or name.startswith(SKIP_PREFIXES)
        or name.endswith(SKIP_SUFFIXES)
        or any(part in f"/{rel}" for part in SKIP_DIRS)
    )


def document_id(rel: str) -> str:
    """The corpus path (below the package's folder) of an unpacked file."""
    if rel.startswith("usr/share/man/"):
        out = rel.removeprefix("usr/share/man/").removesuffix(".gz")
        return f"{out}.txt"
    out = rel.split("/", 4)[4] if rel.startswith("usr/share/doc/") else rel
    out = out.removesuffix(".gz")
    if out.endswith(".htm"):
        return f"{out}l"
    return out if out.endswith((".html", ".txt")) else f"{out}.txt"


def read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def render_man(path: Path) -> str:
    """A man page as text: 100 columns, no hyphenation, left-adjusted, overstrikes removed."""
    env = {**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8"}
    shown = subprocess.run(
        ["man", "--nh", "--nj", "-E", "UTF-8", "-l", str(path)], env=env, capture_output=True, check=False
    )
    plain = subprocess.run(["col", "-bx"], input=shown.stdout, capture_output=True, check=False)
    return plain.stdout.decode("utf-8", "replace")


def only_includes(source: bytes) -> bool:
    """A man page that is a single `.so other-page` line (an alias of another page)."""
    lines = [
        line
        for line in source.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith('.\\"')
    ]
    return len(lines) == 1 and lines[0].startswith(".so")


def fetch(package: str, version: str, work: Path) -> Path:
    candidate = subprocess.run(
        ["apt-cache", "policy", package], capture_output=True, text=True, check=True
    ).stdout
    available = next((line.split()[1] for line in candidate.splitlines() if "Candidate:" in line), "")
    if not available or available == "(none)":
        raise SystemExit(f"{package}: no candidate version (run apt-get update)")
    if available != version:
        print(
            f"warning: {package} {available}, the questions were written against {version}", file=sys.stderr
        )
    pattern = f"{package}_{available.replace(':', '%3a')}_*.deb"
    found = sorted(work.glob(pattern))
    if not found:
        subprocess.run(
            ["apt-get", "download", "-qq", "-o", "APT::Sandbox::User=root", f"{package}={available}"],
            cwd=work,
            check=True,
        )
        found = sorted(work.glob(pattern))
    return found[0]


def document_text(root: Path, rel: str, html_names: set[str]) -> bytes | None:
    """The text of one unpacked file as the corpus keeps it, or None when it is no document (a man page that
    only includes another or that the package also ships as HTML, a binary, an empty file)."""
    source = root / rel
    if rel.startswith("usr/share/man/"):
        name = rel.rsplit("/", 1)[-1].removesuffix(".gz")
        if only_includes(read(source)) or f"{name}.html" in html_names:
            return None
        text = render_man(source).encode()
    else:
        text = read(source)
        if b"\0" in text[:8192]:  # not text
            return None
    return text if text.strip() else None


def build(out: Path, work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    total = 0
    for package, version in PACKAGES.items():
        deb = fetch(package, version, work)
        target = out / package
        shutil.rmtree(target, ignore_errors=True)
        count = 0
        with tempfile.TemporaryDirectory() as unpacked:
            root = Path(unpacked)
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
            files = sorted(
                str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink()
            )
            html_names = {f.rsplit("/", 1)[-1] for f in files if f.endswith(".html")}
            for rel in (f for f in files if not skipped(f)):
                text = document_text(root, rel, html_names)
                if text is None:
                    continue
                destination = target / document_id(rel)
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(text)
                count += 1
        print(f"{package:22s} {count:4d} documents")
        total += count
    return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("outdir", type=Path, help="where the rendered documents go (created if missing)")
    args = parser.parse_args()
    work = Path(os.environ.get("EXTRA_CORPUS_WORK", "/tmp/extra-corpus-work"))
    total = build(args.outdir.resolve(), work)
    print(f"{total} documents in {args.outdir}")


if __name__ == "__main__":
    main()
