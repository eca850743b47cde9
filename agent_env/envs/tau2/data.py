"""τ²-bench's domain data and its prompts at run time, never shipped: downloaded at a pinned commit into the user's
cache and checked against its SHA-256, or read from a folder the user names (`data_dir=`, or `$AGENT_ENV_TAU2_DATA`),
laid out as `<domain>/<file>` with the prompts' folders beside the domains: `agent/llm_agent.py` (the agent's
instruction) and `user_simulator/<file>` (the user simulator's guidelines).

The data is Sierra's (MIT); agent_env ships only where to find it and what its hashes are. A file is written to the
cache only once it is whole and its hash matches, so no corrupt file is ever left there, nor a folder a failed
download made. A file that cannot be read or parsed, in the cache or in a named folder, is a `Tau2DataError` naming
it, what is wrong with it, and the ways out (`unusable`).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import secrets
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from agent_env.errors import AgentEnvError

COMMIT = "a2c024725189473d2d7cea3a5cfdbcc67478e41f"
"""The tau2-bench commit whose data this implements (2026-08-18, release line 1.0.x): results are comparable with
runs on this data, and only on it."""
SOURCE = "https://github.com/sierra-research/tau2-bench"
URL_PATTERN = (
    "https://raw.githubusercontent.com/sierra-research/tau2-bench/{commit}/data/tau2/domains/{domain}/{file}"
)
"""Where each file of a domain is downloaded from; `$AGENT_ENV_TAU2_URL` (or `url=`) names a mirror with the same
fields (`{domain}` is then also `agent` or `user_simulator` for the prompts' files: a mirror laid out as a named
folder is)."""
TEXTS_URL_PATTERN = "https://raw.githubusercontent.com/sierra-research/tau2-bench/{commit}/{path}/{file}"
"""Where each file of the prompts is downloaded from: its path in tau2-bench's repository (`TEXT_PATHS`)."""
DATA_ENV = "AGENT_ENV_TAU2_DATA"
"""The variable naming a folder laid out as `<domain>/<file>` (tau2-bench's `data/tau2/domains`), with `agent/` and
`user_simulator/` beside the domains."""
URL_ENV = "AGENT_ENV_TAU2_URL"
CACHE_ENV = "AGENT_ENV_CACHE"
"""The variable naming agent_env's cache folder (default `$XDG_CACHE_HOME/agent_env`, or `~/.cache/agent_env`)."""

FILES: dict[str, dict[str, str]] = {
    "airline": {
        "db.json": "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
        "policy.md": "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
        "split_tasks.json": "b22ced4d9a9850ac9aea31c53bdcb6d6009058140bd9acc7db37c1d36222ba8b",
        "tasks.json": "ccd8ba737b4cc371415af70151187788f728d6108d0916e73bb4317b40542052",
    },
    "retail": {
        "db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
        "policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
        "split_tasks.json": "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
        "tasks.json": "8e03ebce7901bd6218e7a7dc3105faa9324091a68058f7fe61c65262868812e8",
    },
    "mock": {
        "db.json": "8661f80b4c693bb15ef2fe6781d24a5765240d61fc74387c770133953f9113ea",
        "policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203",
        "split_tasks.json": "613c3298e6fd3cf03f71f848ecee519068eb4df54a1ceb28596f5aa443ee6581",
        "tasks.json": "0d8bcd14798bf2e6e082432147f62570c57b0897b4e4e388c95bb02ecbe5d8cf",
        "user_db.json": "78d424b5177e430b7f483787a956ad3a6a0880e8e5b312be8e373b15c876d51f",
    },
    "telecom": {
        "db.toml": "562d647ef9d7df8df91eafd8ee76036e707c8f9e32aaedc4a7fde06975aea2c0",
        "user_db.toml": "4886107ea0c16f8e16d74bef91cfb557de61822afe9361f5a9b241806aea2e4c",
        "tasks.json": "37e562e1ae3242577407e1303b1548bc64e7ea68e37d36173e6747990ceaf8a4",
        "split_tasks.json": "605b488bb9a6acb3c7f4505240a855fdc8681d09aadb16a8f38b2efcfc5c3aec",
        "main_policy.md": "95943844a0cf11fdf0e2842b483b81d9f9338aa53235712ed131db075d086ed7",
        "tech_support_manual.md": "015a3ee49ec8c199c5e1a059c922081937b92cf3a5ea74fedbc4357816f389ba",
        "tech_support_workflow.md": "64f3ccd13875d14f358b21b9af221dab09e0e7bf5690d0e4322fb91855a43a4d",
        "main_policy_solo.md": "781296ae5419169cb64aac0c4fa2aa6129c78f3c1592f64abd80df6fbabb7042",
        "tech_support_workflow_solo.md": "b174d1f9705b5d7df49468daf99560a5633f86d23e10499a1166a7753706a412",
    },
}
"""Each domain's files at `COMMIT`, with their SHA-256."""

TEXTS: dict[str, dict[str, str]] = {
    "agent": {"llm_agent.py": "d13412ff502859f0ef0492af0128f1b2666be32640057ba8e076d2602af084d8"},
    "user_simulator": {
        "simulation_guidelines.md": "740a29dfa64d7bc08eea3bf7493575b914a63f744acbaf7f199ee07eddaf72d3",
        "simulation_guidelines_tools.md": "cbf3d8a4d8642fd04e559862f1afef55d7dd4e6a7e727ca49e239023c599de0c",
    },
}
"""The prompts' files at `COMMIT` (read, never imported or run), with their SHA-256: the agent's module, for its
instruction, and the user simulator's guidelines (without tools, and with)."""
TEXT_PATHS = {"agent": "src/tau2/agent", "user_simulator": "data/tau2/user_simulator"}
"""Where each folder of `TEXTS` is in tau2-bench's repository."""
LAYOUT = (
    "laid out as <domain>/<file> (tau2-bench's data/tau2/domains), with agent/llm_agent.py and "
    "user_simulator/<file> beside the domains"
)
"""How a named folder is laid out, as messages say it."""

PROGRESS_BYTES = 1 << 20
"""Files at least this large show their download's progress."""
_CHUNK = 1 << 16

logger = logging.getLogger("agent_env")
_lock = threading.Lock()


class Tau2DataError(AgentEnvError, OSError):
    """τ²-bench's data cannot be had: not downloadable here, not whole, or not what the pinned commit holds."""

    code = "tau2_data"


def domain_folder(
    domain: str, data_dir: str | os.PathLike[str] | None = None, *, url: str | None = None
) -> Path:
    """The folder holding `domain`'s files, every one present and checked.

    Args:
        domain: `airline`, `retail`, `mock` or `telecom`; or `agent` or `user_simulator`, the prompts' folders
            (`TEXTS`).
        data_dir: A folder laid out as `<domain>/<file>`; by default `$AGENT_ENV_TAU2_DATA`, and without either the
            cache, where missing files are downloaded at `COMMIT` first.
        url: The download pattern (`URL_PATTERN`'s fields); by default `$AGENT_ENV_TAU2_URL`, else GitHub's.

    Raises:
        LookupError: No such domain.
        Tau2DataError: A file is missing from a named folder, or cannot be downloaded whole and as hashed; the
            message names both ways out.
    """
    files = FILES.get(domain) or TEXTS.get(domain)
    if files is None:
        raise LookupError(f"τ²-bench has no domain {domain!r} here; the domains are {', '.join(FILES)}")
    named = named_root(data_dir)
    if named is not None:
        return _named_folder(named, domain)
    folder = cache_root() / "tau2" / COMMIT[:12] / domain
    pattern = url or os.environ.get(URL_ENV) or (URL_PATTERN if domain in FILES else TEXTS_URL_PATTERN)
    path = TEXT_PATHS.get(domain, "")
    with _lock:
        made = _missing_folders(folder)
        try:
            for name, digest in files.items():
                address = pattern.format(commit=COMMIT, domain=domain, file=name, path=path)
                _cached(folder / name, digest, address)
        except BaseException:
            _remove_empty(made)
            raise
    return folder


def named_root(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder the user names (`data_dir`, else `$AGENT_ENV_TAU2_DATA`), or None for the cache."""
    named = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    return Path(named) if named is not None else None


def cache_root() -> Path:
    """agent_env's cache folder: `$AGENT_ENV_CACHE`, else `$XDG_CACHE_HOME/agent_env`, else `~/.cache/agent_env`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "agent_env"


def _named_folder(root: Path, domain: str) -> Path:
    folder = root / domain
    for name, digest in (FILES.get(domain) or TEXTS[domain]).items():
        path = folder / name
        if not path.is_file():
            raise Tau2DataError(
                f"τ²-bench's {domain}/{name} is not in {root} (from data_dir= or ${DATA_ENV}): name a folder "
                f"{LAYOUT}, or give none to download the data at commit {COMMIT[:12]} into {cache_root()}"
            )
        if _digest(path, domain, named=True) != digest:
            _warn_changed(path, domain, name)
    return folder


def unusable(path: Path, domain: str, problem: str, *, named: bool) -> Tau2DataError:
    """The error for a domain's file that cannot be read or parsed: the file, what is wrong with it (one line), and
    the ways out, which differ for a folder the user named (`named`) and the cache."""
    if named:
        return Tau2DataError(
            f"τ²-bench's {domain}/{path.name} at {path} (in the folder named by data_dir= or ${DATA_ENV}) cannot be "
            f"used: {problem}. Fix or replace the file (tau2-bench's own: download it again from {SOURCE} at commit "
            f"{COMMIT[:12]}), or name no folder (neither data_dir= nor ${DATA_ENV}) and agent_env downloads the data "
            f"at that commit into {cache_root()}, which needs network access"
        )
    return Tau2DataError(
        f"the cached {path} cannot be used: {problem}. Remove it and agent_env downloads it again at commit "
        f"{COMMIT[:12]} from {SOURCE} (which needs network access), or point ${CACHE_ENV} at another folder, or "
        f"download the data yourself and name its folder with data_dir= or ${DATA_ENV} ({LAYOUT})"
    )


def _digest(path: Path, domain: str, *, named: bool) -> str:
    try:
        return _checked_digest(str(path))
    except OSError as error:
        raise unusable(path, domain, unreadable(error), named=named) from None


def unreadable(error: OSError) -> str:
    """Why a file cannot be read, in a few words: `it cannot be read (PermissionError: Permission denied)`."""
    return f"it cannot be read ({type(error).__name__}: {error.strerror or error})"


_warned: set[str] = set()


def _warn_changed(path: Path, domain: str, name: str) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        logger.warning(
            "agent_env: %s is not τ²-bench's %s/%s at commit %s (its SHA-256 differs): results on it are not "
            "comparable with runs on the pinned data",
            path,
            domain,
            name,
            COMMIT[:12],
        )


@lru_cache(maxsize=64)
def _checked_digest(path: str) -> str:
    """A file's SHA-256, computed once per process."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _cached(path: Path, digest: str, url: str) -> None:
    """Make sure `path` holds the file whose SHA-256 is `digest`: keep it if it does, else download it."""
    if path.is_file():
        if _digest(path, path.parent.name, named=False) == digest:
            return
        _checked_digest.cache_clear()
        logger.warning("agent_env: %s does not match its SHA-256; downloading it again", path)
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            problem = f"the cached {path.name} does not match its SHA-256 and cannot be removed"
            raise _unwritable(path, problem, error) from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _unwritable(path, f"the cache folder {path.parent} cannot be made", error) from None
    download(url, path, digest)


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first: what making it would make."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders (deepest first) that are still empty, so that a failed download leaves none it made."""
    for folder in folders:
        try:
            folder.rmdir()
        except (
            OSError
        ):  # not empty (a file was kept), or gone, or not ours to remove: leave it and its parents
            return


def download(url: str, path: Path, digest: str, *, timeout: float = 60.0) -> None:
    """Download `url` to `path`, written only once it is whole and its SHA-256 is `digest`.

    Args:
        url: What to download.
        path: Where the file goes; its folder must exist.
        digest: The file's SHA-256, in hex.
        timeout: Seconds to wait for the server to connect or to send more, each time.

    Raises:
        Tau2DataError: The download failed, stopped short of its length, or does not match `digest`, or `path`'s
            folder cannot be written; nothing is left at `path` or beside it.
    """
    try:
        handle, partial = _partial_file(path)
    except OSError as error:
        raise _unwritable(path, f"{path.parent} cannot be written to", error) from None
    try:
        try:
            with os.fdopen(handle, "wb") as out:
                received, hasher = _fetch(url, out, path.name, timeout)
        except Tau2DataError:
            raise
        except OSError as error:  # the last write, flushed as the file closes
            raise _unwritable(path, f"writing {path.name} into {path.parent} failed", error) from None
        if hasher.hexdigest() != digest:
            raise _failure(
                path,
                f"the file downloaded from {url} ({received} bytes) does not match its SHA-256 {digest[:12]}",
            )
        try:
            os.replace(partial, path)
        except OSError as error:
            raise _unwritable(path, f"{path} cannot be written", error) from None
    finally:
        Path(partial).unlink(missing_ok=True)


def _partial_file(path: Path) -> tuple[int, str]:
    """A new file beside `path` to download into, opened for writing. It is created with the mode the umask allows
    (as any file the user makes: 0o644 under the usual 022), which `os.replace` keeps; `tempfile.mkstemp` would make
    it 0o600 whatever the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        partial = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.part")
        try:
            return os.open(partial, flags, 0o666), partial
        except FileExistsError:  # another process's, by a 1 in 2**48 chance: take another name
            continue


def _fetch(url: str, out: BinaryIO, name: str, timeout: float) -> tuple[int, hashlib._Hash]:
    hasher = hashlib.sha256()
    received = 0
    length: int | None = None
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            length = int(response.headers.get("Content-Length") or 0) or None
            show = _progress(name, length)
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                hasher.update(chunk)
                received += len(chunk)
                show(received)
                try:
                    out.write(chunk)
                except OSError as error:
                    raise _unwritable(Path(name), f"writing {name} into the cache failed", error) from None
            show(received, done=True)
    except http.client.IncompleteRead:
        raise _failure(Path(name), f"the download of {url} was cut off after {received} bytes") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        if isinstance(error, Tau2DataError):
            raise
        reason = getattr(error, "reason", None) or error
        if isinstance(reason, TimeoutError):
            raise _failure(Path(name), f"downloading {url} timed out (nothing for {timeout:g} s)") from None
        raise _failure(Path(name), f"downloading {url} failed ({type(error).__name__}: {reason})") from None
    if length is not None and received != length:
        raise _failure(Path(name), f"the download of {url} stopped at {received} of {length} bytes")
    return received, hasher


def _failure(path: Path, problem: str) -> Tau2DataError:
    return Tau2DataError(
        f"{problem}. τ²-bench's data comes from {SOURCE} at commit {COMMIT[:12]}: let agent_env download it (it "
        f"needs network access to raw.githubusercontent.com, or a mirror in ${URL_ENV}), or download the data "
        f"yourself and name its folder with data_dir= or ${DATA_ENV} ({LAYOUT})"
    )


def _unwritable(path: Path, problem: str, error: OSError) -> Tau2DataError:
    return Tau2DataError(
        f"{problem} ({type(error).__name__}: {error.strerror or error}), so τ²-bench's {path.name} cannot be "
        f"cached there. Point ${CACHE_ENV} at a folder you can write (agent_env then downloads the data at commit "
        f"{COMMIT[:12]} from {SOURCE}, which needs network access), or download the data yourself and name its "
        f"folder with data_dir= or ${DATA_ENV} ({LAYOUT}), which is read in place"
    )


def _progress(name: str, length: int | None) -> Callable[..., None]:
    """What reports a download's progress on stderr: a line that updates in place on a terminal, a start and an end
    line otherwise; nothing for a small file."""
    if length is None or length < PROGRESS_BYTES:
        return lambda received, done=False: None
    terminal = sys.stderr.isatty()
    total = f"{length / (1 << 20):.1f} MiB"
    sys.stderr.write(f"agent_env: downloading τ²-bench {name} ({total})" + ("" if terminal else "\n"))
    shown = [-1]

    def show(received: int, done: bool = False) -> None:
        percent = received * 100 // length
        if terminal and percent != shown[0]:
            shown[0] = percent
            sys.stderr.write(f"\ragent_env: downloading τ²-bench {name} ({total}) {percent:3d}%")
        if done:
            sys.stderr.write("\n" if terminal else f"agent_env: downloaded τ²-bench {name} ({total})\n")
        sys.stderr.flush()

    return show
