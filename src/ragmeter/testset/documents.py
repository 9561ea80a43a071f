"""Documents a test set is written from: files in a folder, or objects from LangChain and
LlamaIndex.

Markdown and plain text are read as they are; HTML through the standard library's parser
(headings become Markdown headings, so the chunker cuts on them alike); PDF through pypdf,
imported only when a PDF is given (``pip install 'ragmeter[pdf]'``). A file that cannot
give text (empty, binary, an unreadable PDF) is skipped with its reason, never a crash: a
folder a team points the command at holds whatever it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES
"""What a folder is searched for; a file named on its own is read as text whatever its name."""

_SNIFF = 8192


@dataclass(frozen=True)
class Document:
    """One document's text, named as the test set cites it (a path relative to the folder
    given, or the ``source`` of a LangChain document)."""

    name: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A source that gave no text, and why."""

    name: str
    reason: str


@dataclass
class Corpus:
    documents: list[Document]
    skipped: list[Skipped]


def read_documents(sources: Any) -> Corpus:
    """The documents of ``sources``: a folder or file path, or a list of paths, strings
    (taken as text), LangChain ``Document``s (``page_content``, ``metadata``) or LlamaIndex
    nodes (``get_content()``, ``metadata``), which are recognised by those attributes.

    Raises:
        FileNotFoundError: a path that does not exist.
        ImportError: a PDF was given and pypdf is not installed.
    """
    items = [sources] if isinstance(sources, str | Path) else list(sources)
    corpus = Corpus([], [])
    for number, item in enumerate(items, 1):
        if isinstance(item, Path) or (isinstance(item, str) and _looks_like_path(item)):
            _read_path(Path(item), corpus)
        else:
            document = _from_object(number, item)
            _keep(corpus, document.name, document.text, document.metadata)
    return corpus


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and len(text) < 4096 and Path(text).exists()


def _read_path(path: Path, corpus: Corpus) -> None:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
        for file in files:
            _read_file(file, file.relative_to(path).as_posix(), corpus)
    else:
        _read_file(path, path.name, corpus)


def _read_file(path: Path, name: str, corpus: Corpus) -> None:
    suffix = path.suffix.lower()
    try:
        if suffix in PDF_SUFFIXES:
            text = pdf_text(path)
        else:
            raw = path.read_bytes()
            if b"\x00" in raw[:_SNIFF]:
                corpus.skipped.append(Skipped(name, "binary file (NUL bytes)"))
                return
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                reason = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
                corpus.skipped.append(Skipped(name, reason))
                return
            if suffix in HTML_SUFFIXES:
                text = html_text(text)
    except _UnreadablePdf as exc:
        corpus.skipped.append(Skipped(name, str(exc)))
        return
    _keep(corpus, name, text, {"path": str(path)})


def _keep(corpus: Corpus, name: str, text: str, metadata: dict[str, Any]) -> None:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not re.search(r"\w", text):
        corpus.skipped.append(Skipped(name, "no text"))
        return
    taken = {d.name for d in corpus.documents}
    unique, copy = name, 1
    while unique in taken:  # two LangChain documents with one source
        copy += 1
        unique = f"{name}#{copy}"
    corpus.documents.append(Document(unique, text, metadata))


def _from_object(number: int, item: Any) -> Document:
    """A LangChain ``Document``, a LlamaIndex node, or a string, as a ``Document``."""
    metadata = dict(getattr(item, "metadata", None) or {})
    if isinstance(item, str):
        text = item
    elif hasattr(item, "page_content"):
        text = item.page_content
    elif callable(getattr(item, "get_content", None)):
        text = item.get_content()
    else:
        raise TypeError(
            f"document {number}: expected a path, a string, a LangChain Document or a "
            f"LlamaIndex node, got {type(item).__name__}"
        )
    if not isinstance(text, str):
        raise TypeError(f"document {number}: its text is a {type(text).__name__}, not a string")
    name = next(
        (
            str(metadata[key])
            for key in ("source", "file_name", "file_path", "title")
            if metadata.get(key)
        ),
        f"document {number}",
    )
    return Document(name, text, _plain(metadata))


def _plain(metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        str(k): v for k, v in metadata.items() if isinstance(v, str | int | float | bool | None)
    }


# --- HTML -------------------------------------------------------------------------------------

_BLOCKS = frozenset(
    {"p", "div", "br", "li", "tr", "table", "section", "article", "ul", "ol", "pre", "blockquote"}
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HIDDEN = frozenset({"script", "style", "noscript", "template", "head"})


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n")
        elif tag in {"td", "th"}:
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _HEADINGS or tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(markup: str) -> str:
    """The visible text of an HTML page, headings as Markdown headings, one block a line."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    lines = (line.strip() for line in "".join(parser.parts).split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# --- PDF --------------------------------------------------------------------------------------


class _UnreadablePdf(Exception):
    pass


def pdf_text(path: Path) -> str:
    """The text of a PDF's pages, a blank line between pages (pypdf, the ``pdf`` extra)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise ImportError(f"{path}: reading PDF needs pypdf: pip install 'ragmeter[pdf]'") from exc
    try:
        reader = PdfReader(str(path))
        return "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise _UnreadablePdf(f"unreadable PDF ({type(exc).__name__}: {exc})") from exc
