"""The public data sets cq's experiments read, fetched from their official sources (``cq data get``).

One registry (:data:`DATASETS`): per data set its official URL, the subdirectory of the data
directory it goes to, and the files the Makefile reads there. ``get`` downloads a source file (or
uses one already placed in its directory by hand), checks it, unpacks it, and records the SHA-256 of
every file it wrote in ``DIR/SHA256SUMS`` (``sha256sum -c`` format); a later ``get`` checks present
files against that list. Most official files' checksums are not pinned yet (``sha256=None``): they
could not be computed where this was written (no network); CLAMBER's and CondAmbigQA's are, from the
authors' git repositories at the commits their URLs name. A user with network pins them by copying
the ``sha256`` that ``cq data get`` prints into :data:`DATASETS`; a pinned checksum that does not
match refuses the file and keeps nothing. Until then a download shorter than its declared length is
refused, and so is a source file that fails its data set's format check (``psgs-w100``: gzip with
DPR's header line, whole to the end of its stream): an HTML error page or a cut download is never
recorded as the data.
"""
from __future__ import annotations

import errno
import hashlib
import http.client
import logging
import os
import posixpath
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputError, ResourceError
from .files import CHUNK, Atomic, asqa_dev, dpr_tsv_gz, git_blob_of, nq_open_dev, remove, sha256_of

log = logging.getLogger("cqtools")
SUMS = "SHA256SUMS"


@dataclass(frozen=True)
class Dataset:
    """One data set: ``url`` is fetched into ``DIR/subdir/<its file name>`` (pinned by ``sha256``
    when known); ``members`` are the files taken out of a zip archive (by base name, into
    ``subdir``), ``outputs`` the files the Makefile reads, ``derive`` writes those not in the archive."""

    name: str
    url: str
    subdir: str
    outputs: tuple[str, ...]
    help: str
    members: tuple[str, ...] = ()
    optional_members: tuple[str, ...] = ()
    sha256: str | None = None  # None: not pinned yet (see the module docstring)
    git_blob: str | None = None  # the file's git blob id at the commit its URL names (when only that is known)
    derive: Callable[[str], list[str]] | None = field(default=None, compare=False)
    check: Callable[[str], None] | None = field(default=None, compare=False)  # the source file's format (raises)

    @property
    def filename(self) -> str:
        return posixpath.basename(urllib.parse.urlsplit(self.url).path)

    @property
    def source(self) -> str:
        """The downloaded file's path relative to the data directory."""
        return f"{self.subdir}/{self.filename}"

    def describe(self, root: str) -> dict:
        return {"name": self.name, "url": self.url, "help": self.help, "dir": os.path.join(root, self.subdir),
                "source": self.source, "files": [f"{self.subdir}/{o}" for o in self.outputs], "sha256": self.sha256,
                "git_blob": self.git_blob}


AMBIGQA = "https://nlp.cs.washington.edu/ambigqa/data/"
GITHUB = "https://raw.githubusercontent.com/"
DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("ambignq-light", AMBIGQA + "ambignq_light.zip", "ambignq", ("train_light.json", "dev_light.json"),
            "AmbigNQ, light format (Min et al. 2020; CC BY-SA 3.0)", members=("train_light.json", "dev_light.json")),
    Dataset("ambignq", AMBIGQA + "ambignq.zip", "ambignq", ("train.json", "dev.json"),
            "AmbigNQ, full format: search queries and viewed pages as well (CC BY-SA 3.0)",
            members=("train.json", "dev.json")),
    Dataset("nq-open", AMBIGQA + "nqopen.zip", "nq_open", ("dev.jsonl",),
            "NQ-open, AmbigQA's release of its splits (Natural Questions; CC BY-SA 3.0)",
            optional_members=("train.json", "dev.json", "test.json", "dev.jsonl"), derive=nq_open_dev),
    Dataset("asqa", "https://storage.googleapis.com/gresearch/ASQA/ASQA.json", "asqa", ("dev.json",),
            "ASQA (Stelmakh et al. 2022; Apache-2.0); asqa/dev.json is its dev split", derive=asqa_dev),
    # Issue 46. CLAMBER, CondAmbigQA: the authors' file at a fixed commit, SHA-256 from that commit's blob.
    # AMBIGNQ-CQ: its CSV's content was absent from the fetched repository, but the commit's tree names its blob
    # id, so the file is pinned by that (git's SHA-1 of "blob <size>\0" and the bytes). Not pinned (not readable
    # here): ALCE and AmbigDocs (Hugging Face hub; AmbigDocs' name from its README's data/test.json, unchecked).
    Dataset("clamber", GITHUB + "zt991211/CLAMBER/764fa21a973afb768b81c03dbe0790f329255a6b/clamber_benchmark.jsonl",
            "clamber", ("clamber_benchmark.jsonl",), "CLAMBER (Zhang et al. 2024): 3,202 queries in an ambiguity "
            "taxonomy, with clarifying questions",
            sha256="58b195515fca3692c6756fc5242983461659c2f9a7f366b509f16b4cbe917fe0"),
    Dataset("condambigqa", GITHUB + "innovation64/CondAmbigQA/5dde70162eccd3c5fe5f2b703b818345b8936800/experiment_code/"
            "data/mcaqa.json", "condambigqa", ("mcaqa.json",), "CondAmbigQA (Li et al. 2025): 200 questions with "
            "the conditions that separate their answers, and 20 retrieved passages each",
            sha256="d6554f6465f32b7ee889f0fcada3a4a3296f0629cf15b47d64a0c7874791a63f"),
    Dataset("alce", "https://huggingface.co/datasets/princeton-nlp/ALCE-data/resolve/main/ALCE-data.tar", "alce",
            ("asqa_eval_gtr_top100.json",), "ALCE (Gao et al. 2023): ASQA with GTR's top-100 passages to cite",
            members=("asqa_eval_gtr_top100.json",)),
    Dataset("ambigdocs", "https://huggingface.co/datasets/yoonsanglee/AmbigDocs/resolve/main/test.json", "ambigdocs",
            ("test.json",), "AmbigDocs (Lee et al. 2024): questions whose documents name different entities"),
    Dataset("ambignq-cq", GITHUB + "emnlppaper4012/AMBIGNQ-CQ/20c4d285d6fdc085e556c1ecd030a713e55338b2/data/"
            "dev.csv", "ambignq_cq", ("dev.csv",), "AMBIGNQ-CQ: GPT-3 clarifying questions for AmbigNQ (join onto "
            "ambignq)", git_blob="ebd40a1e2a6863e446ac64c7c27a552e4fb0394d"),
    Dataset("psgs-w100", "https://dl.fbaipublicfiles.com/dpr/wikipedia_split/psgs_w100.tsv.gz", "wikipedia",
            ("psgs_w100.tsv.gz",), "DPR's Wikipedia passages, 21M x 100 words (CC BY-SA; about 4.7 GB): "
            "cq index --corpus reads it as it is", check=dpr_tsv_gz),
)}


def names() -> list[str]:
    return list(DATASETS)


def dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise InputError(f"unknown data set {name!r}; cq data list names them: {', '.join(DATASETS)}") from None


def source_url(ds: Dataset, mirror: str | None) -> str:
    """The official URL, or the same file name under ``mirror`` (a directory of the same files)."""
    return f"{mirror.rstrip('/')}/{ds.filename}" if mirror else ds.url


def read_sums(root: str) -> dict[str, str]:
    """``DIR/SHA256SUMS`` as {relative path: sha256} (empty when absent)."""
    path = os.path.join(root, SUMS)
    if not os.path.exists(path):
        return {}
    sums = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            digest, sep, name = line.rstrip("\n").partition("  ")
            if not sep or len(digest) != 64:
                raise InputError(f"{path} line {n}: expected '<sha256>  <path>'; fix or delete the line")
            sums[name] = digest
    return sums


def write_sums(root: str, sums: dict[str, str]) -> None:
    with Atomic(os.path.join(root, SUMS)) as out:
        out.write("".join(f"{d}  {p}\n" for p, d in sorted(sums.items())).encode())


def get(name: str, root: str, mirror: str | None = None, timeout: float = 60.0) -> dict:
    """Put data set ``name`` into ``root``: its outputs checked or made. Returns what was done:
    {"name", "dir", "action" (present|placed|downloaded), "files": [{"path", "sha256", "pinned"}]}."""
    ds = dataset(name)
    directory = os.path.join(root, ds.subdir)
    sums = read_sums(root)
    outputs = [f"{ds.subdir}/{o}" for o in ds.outputs]
    source = ds.source
    for rel in [source] + outputs:  # whatever cq recorded and is still here must be what it recorded
        _check_recorded(root, rel, sums, ds)
    if all(os.path.exists(os.path.join(root, o)) for o in outputs) and (source not in outputs or source in sums):
        action = "present"  # there before (by cq or by hand) and checked above: nothing to fetch or write
        written: list[str] = []
    else:
        source_path = os.path.join(root, source)
        if os.path.exists(source_path):
            action = "placed"
            _check_pinned(ds, source_path, sha256_of(source_path), keep=True)
            _check_format(ds, source_path, keep=True)
        else:
            action = "downloaded"
            _download(ds, source_url(ds, mirror), source_path, timeout)
        try:
            written = [source] + [f"{ds.subdir}/{f}" for f in _unpack(ds, source_path, directory)]
        except InputError as err:
            if action != "downloaded":
                raise
            remove(source_path)  # what cq downloaded and cannot use is not kept at its final name
            raise InputError(err.message.replace("delete it and run", "it is removed; run").replace(
                "Delete it and run", "It is removed; run")) from None
    files = []
    for rel in dict.fromkeys([source] + written + outputs):
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        digest = sums.get(rel) if rel not in written else sha256_of(path)
        if rel in written:
            sums[rel] = digest
        files.append({"path": rel, "sha256": digest,
                      "pinned": rel == source and (ds.sha256 or ds.git_blob) is not None})
    missing = [o for o in outputs if not os.path.exists(os.path.join(root, o))]
    if missing:
        raise InputError(f"{ds.source} did not give {', '.join(missing)}: is it {ds.url}? Delete it and run "
                         f"cq data get {name} again")
    if written:
        write_sums(root, sums)
    return {"name": name, "dir": directory, "action": action, "files": files}


def _check_recorded(root: str, rel: str, sums: dict[str, str], ds: Dataset) -> None:
    path = os.path.join(root, rel)
    if rel in sums and os.path.exists(path) and sha256_of(path) != sums[rel]:
        raise InputError(f"{path} does not match its checksum in {os.path.join(root, SUMS)} (damaged or replaced); "
                         f"delete it and run cq data get {ds.name} again")


def _check_pinned(ds: Dataset, path: str, digest: str, keep: bool) -> None:
    blob = git_blob_of(path) if ds.git_blob is not None else None
    if ds.sha256 is not None and digest != ds.sha256:
        found = f"sha256 {digest}, not the pinned {ds.sha256}"
    elif blob != ds.git_blob:
        found = f"git blob id {blob}, not the pinned {ds.git_blob}"
    else:
        return
    if not keep:
        os.remove(path)
    what = "placed by hand, left as it is" if keep else "refused, nothing kept"
    raise InputError(f"{ds.filename} has {found} ({what}); fetch {ds.url} again")


def _check_format(ds: Dataset, path: str, keep: bool) -> None:
    """The data set's own format check of its source file; a failure keeps nothing downloaded."""
    if ds.check is None:
        return
    try:
        ds.check(path)
    except InputError as err:
        if not keep:
            remove(path)
        what = "placed by hand, left as it is" if keep else "refused, nothing kept"
        raise InputError(f"{err.message} ({what}); fetch {ds.url} again") from None


MIN_RATE = 10 << 10  # bytes a second: a download slower than this on average after --timeout seconds is stopped


def _download(ds: Dataset, url: str, target: str, timeout: float) -> None:
    import time

    from ..outputs import remove_stale

    directory = os.path.dirname(target)
    part = os.path.join(directory, f".{ds.filename}.part-{os.getpid()}")
    try:
        os.makedirs(directory, exist_ok=True)
        open(part, "wb").close()
    except OSError as err:
        raise ResourceError(f"cannot write into {directory} ({err.strerror}); pass a writable --dir") from None
    remove_stale(directory, rf"^\.{re.escape(ds.filename)}\.part-(\d+)$")  # a killed download's part
    log.info(f"downloading {url} to {target}")
    try:
        digest = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            received, start = 0, time.monotonic()
            read = getattr(response, "read1", response.read)  # what has arrived: a drip cannot hold one read
            for chunk in iter(lambda: read(CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
                received += len(chunk)
                elapsed = time.monotonic() - start
                if elapsed > timeout and received < MIN_RATE * elapsed:
                    raise TimeoutError(f"{received} bytes in {elapsed:.0f} s, under {MIN_RATE >> 10} KiB/s on "
                                       f"average after --timeout {timeout:g} s")
            _check_length(response.headers.get("Content-Length"), received)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as err:
        remove(part)
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise  # a full disk is not the network's fault: the CLI says so (cqtools/cli/__init__.py)
        reason = getattr(err, "reason", None) or err
        raise ResourceError(f"cannot download {url} ({reason}); without network, fetch it elsewhere and put "
                            f"{ds.filename} in {directory}/, then run cq data get {ds.name} again") from None
    except BaseException:
        remove(part)
        raise
    _check_pinned(ds, part, digest.hexdigest(), keep=False)
    _check_format(ds, part, keep=False)
    os.replace(part, target)


def _check_length(declared: str | None, received: int) -> None:
    """A download that ended before the length its server declared is cut short."""
    if declared is not None and declared.isdigit() and int(declared) != received:
        raise http.client.IncompleteRead(b"", int(declared) - received)


def _unpack(ds: Dataset, source: str, directory: str) -> list[str]:
    """The files written besides the source (names relative to ``directory``)."""
    written = []
    if ds.filename.endswith(".zip"):
        try:
            with zipfile.ZipFile(source) as archive:
                by_name = {}
                for info in archive.infolist():
                    base = posixpath.basename(info.filename)
                    if info.is_dir() or base.startswith(".") or "__MACOSX" in info.filename:
                        continue
                    by_name.setdefault(base, info)
                lacking = [m for m in ds.members if m not in by_name]
                if lacking:
                    raise InputError(f"{source} lacks {', '.join(lacking)}: is it {ds.url}? Delete it and "
                                     f"run cq data get {ds.name} again")
                for member in ds.members + ds.optional_members:
                    if member in by_name:
                        with archive.open(by_name[member]) as src, Atomic(os.path.join(directory, member)) as out:
                            shutil.copyfileobj(src, out, CHUNK)
                        written.append(member)
        except zipfile.BadZipFile as err:
            raise InputError(f"{source} is not a zip archive ({err}); delete it and run cq data get {ds.name} "
                             "again") from None
    if ds.filename.endswith(".tar"):
        written += _untar(ds, source, directory)
    if ds.derive is not None:
        written += ds.derive(directory)
    return written


def _untar(ds: Dataset, source: str, directory: str) -> list[str]:
    """``ds.members`` out of a tar archive by base name (ALCE's ALCE-data.tar holds them under a folder)."""
    import tarfile
    try:
        with tarfile.open(source) as archive:
            by_name = {}
            for info in archive.getmembers():
                if info.isfile() and not posixpath.basename(info.name).startswith("."):
                    by_name.setdefault(posixpath.basename(info.name), info)
            lacking = [m for m in ds.members if m not in by_name]
            if lacking:
                raise InputError(f"{source} lacks {', '.join(lacking)}: is it {ds.url}? Delete it and run "
                                 f"cq data get {ds.name} again")
            for member in ds.members:
                with archive.extractfile(by_name[member]) as src, Atomic(os.path.join(directory, member)) as out:
                    shutil.copyfileobj(src, out, CHUNK)
    except tarfile.TarError as err:
        raise InputError(f"{source} is not a tar archive ({err}); delete it and run cq data get {ds.name} "
                         "again") from None
    return list(ds.members)
