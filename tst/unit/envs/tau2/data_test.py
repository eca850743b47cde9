"""`agent_env/envs/tau2/data.py`: τ²-bench's data comes at run time, downloaded at the pinned commit (here from a
local HTTP server with the same layout) and checked against its SHA-256, or read from a folder the user names; no
corrupt or partial file is ever left in the cache, and every failure names both ways out."""

from __future__ import annotations

import hashlib
import http.server
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env.envs.tau2 import data
from agent_env.envs.tau2.data import Tau2DataError, domain_folder
from tst.support import local_tau2_data

CONTENT = {"db.json": b'{"tasks": {}, "users": {}}' * 3000, "policy.md": b"# Be kind\n", "tasks.json": b"[]"}


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class Server(http.server.ThreadingHTTPServer):
    """Serves `/<commit>/data/tau2/domains/<domain>/<file>` from `files`: `chunked` files in two chunks, `short`
    ones cut mid-body (mid-chunk if chunked), and `stalled` ones stopped mid-body until `release` is set."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.short: set[str] = set()
        self.chunked: set[str] = set()
        self.stalled: set[str] = set()
        self.release = threading.Event()
        self.asked: list[str] = []

    @property
    def pattern(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{{commit}}/data/tau2/domains/{{domain}}/{{file}}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        self.server.asked.append(self.path)
        body = self.server.files.get(name)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        if name in self.server.chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half, rest = body[: len(body) // 2], body[len(body) // 2 :]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
            if name in self.server.short:
                self.wfile.write(b"%x\r\n%s" % (len(rest), rest[:10]))
                return  # the connection closes inside the second chunk
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if name in self.server.stalled:
            self.wfile.write(body[:10])
            self.wfile.flush()
            self.server.release.wait(10)
        self.wfile.write(body[: len(body) // 2] if name in self.server.short else body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.release.set()
        running.shutdown()
        running.server_close()


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: Server) -> Server:
    """A domain `tiny` of three small files, served by `server`; the cache in tmp_path; no folder named."""
    monkeypatch.setitem(data.FILES, "tiny", {name: digest(body) for name, body in CONTENT.items()})
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    monkeypatch.setenv(data.URL_ENV, server.pattern)
    server.files.update(CONTENT)
    data._checked_digest.cache_clear()
    return server


def cached(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "cache").rglob("*") if path.is_file())


def assert_both_ways_out(message: str) -> None:
    """The message names the download (and what it needs) and a folder of the user's own."""
    assert "network access" in message, message
    assert "data_dir= or $AGENT_ENV_TAU2_DATA" in message, message


def test_missing_files_are_downloaded_at_the_pinned_commit_checked_and_kept(
    tiny, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(data, "PROGRESS_BYTES", 1000)
    folder = domain_folder("tiny")
    assert folder == tmp_path / "cache" / "tau2" / data.COMMIT[:12] / "tiny"
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == CONTENT
    assert all(path.startswith(f"/{data.COMMIT}/data/tau2/domains/tiny/") for path in tiny.asked)
    assert "downloading τ²-bench db.json (0.1 MiB)" in capsys.readouterr().err  # the large one shows progress
    tiny.asked.clear()
    assert domain_folder("tiny") == folder and tiny.asked == []  # checked, not downloaded again


def test_a_file_that_does_not_match_its_hash_is_refused_and_not_left_in_the_cache(tiny, tmp_path):
    tiny.files["policy.md"] = b"# Be unkind\n"
    with pytest.raises(Tau2DataError) as raised:
        domain_folder("tiny")
    message = str(raised.value)
    assert "policy.md" in message and "does not match its SHA-256" in message
    assert "let agent_env download it" in message and "data_dir= or $AGENT_ENV_TAU2_DATA" in message
    assert "policy.md" not in cached(tmp_path) and not any(
        name.endswith(".part") for name in cached(tmp_path)
    )


def test_a_download_cut_short_is_refused_and_leaves_nothing(tiny, tmp_path):
    tiny.short.add("db.json")
    with pytest.raises(Tau2DataError, match=r"stopped at \d+ of \d+ bytes") as raised:
        domain_folder("tiny")
    assert_both_ways_out(str(raised.value))
    assert "db.json" not in cached(tmp_path) and not any(name.endswith(".part") for name in cached(tmp_path))


def test_a_chunked_download_cut_mid_chunk_is_the_loaders_error_and_leaves_nothing(tiny, tmp_path):
    tiny.chunked.add("db.json")
    tiny.short.add("db.json")  # http.client raises IncompleteRead here, which is no OSError
    with pytest.raises(Tau2DataError, match=r"db.json was cut off after \d+ bytes") as raised:
        domain_folder("tiny")
    assert_both_ways_out(str(raised.value))
    assert "db.json" not in cached(tmp_path) and not any(name.endswith(".part") for name in cached(tmp_path))


def test_a_whole_chunked_download_is_kept(tiny, tmp_path):
    tiny.chunked.update(CONTENT)
    folder = domain_folder("tiny")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == CONTENT


def test_a_stalled_download_times_out_after_the_timeout_given(tiny, tmp_path):
    tiny.stalled.add("db.json")
    folder = tmp_path / "cache" / "here"
    folder.mkdir(parents=True)
    started = time.monotonic()
    with pytest.raises(Tau2DataError, match=r"db.json timed out \(nothing for 0.3 s\)") as raised:
        data.download(
            tiny.pattern.format(commit=data.COMMIT, domain="tiny", file="db.json"),
            folder / "db.json",
            digest(CONTENT["db.json"]),
            timeout=0.3,
        )
    assert time.monotonic() - started < 5  # the server holds it for 10 s
    assert_both_ways_out(str(raised.value))
    assert list(folder.iterdir()) == []


def test_a_cache_folder_that_cannot_be_made_is_the_loaders_error(tiny, tmp_path, monkeypatch):
    (tmp_path / "taken").write_text("a file where the cache should be")
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "taken"))
    with pytest.raises(Tau2DataError, match=r"the cache folder .*taken.* cannot be made") as raised:
        domain_folder("tiny")
    message = str(raised.value)
    assert "Point $AGENT_ENV_CACHE at a folder you can write" in message
    assert_both_ways_out(message)
    assert tiny.asked == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into any folder")
def test_a_read_only_cache_is_the_loaders_error_and_downloads_nothing(tiny, tmp_path):
    folder = tmp_path / "cache" / "tau2" / data.COMMIT[:12] / "tiny"
    folder.mkdir(parents=True)
    folder.chmod(0o500)
    try:
        with pytest.raises(Tau2DataError, match=r"cannot be written to \(PermissionError") as raised:
            domain_folder("tiny")
    finally:
        folder.chmod(0o700)
    assert_both_ways_out(str(raised.value))
    assert tiny.asked == [] and list(folder.iterdir()) == []


def test_a_cache_that_refuses_the_file_is_the_loaders_error(tiny, tmp_path, monkeypatch):
    """As the read-only test above, where the user is root: the download's file is refused as it is without write
    permission."""
    real_open = os.open

    def refuse(path: str, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".part"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(data.os, "open", refuse)
    with pytest.raises(
        Tau2DataError, match=r"cannot be written to \(PermissionError: Permission denied\)"
    ) as raised:
        domain_folder("tiny")
    message = str(raised.value)
    assert "Point $AGENT_ENV_CACHE at a folder you can write" in message
    assert_both_ways_out(message)
    assert tiny.asked == [] and cached(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="file modes and the umask are POSIX's")
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_cached_file_has_the_mode_the_umask_allows(tiny, umask, mode):
    previous = os.umask(umask)
    try:
        folder = domain_folder("tiny")
    finally:
        os.umask(previous)
    assert {path.name: path.stat().st_mode & 0o777 for path in folder.iterdir()} == dict.fromkeys(
        CONTENT, mode
    )


def test_a_cached_file_that_cannot_be_read_names_it_and_the_ways_out(tiny, tmp_path, monkeypatch):
    folder = domain_folder("tiny")
    data._checked_digest.cache_clear()
    real_open = open

    def refuse(path: str, *args: object, **kwargs: object) -> object:
        if str(path).endswith("policy.md"):  # what chmod 000 does for anyone but root
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(data, "open", refuse, raising=False)
    tiny.asked.clear()
    with pytest.raises(Tau2DataError) as raised:
        domain_folder("tiny")
    message = str(raised.value)
    assert (
        f"the cached {folder / 'policy.md'} cannot be used: it cannot be read (PermissionError: Permission "
        in (message)
    )
    assert "Remove it and agent_env downloads it again" in message and "Point" not in message
    assert_both_ways_out(message)
    assert tiny.asked == [] and (folder / "policy.md").read_bytes() == CONTENT["policy.md"]


def test_a_failed_download_leaves_no_folder_it_made(tiny, tmp_path):
    tiny.files.pop("db.json")  # the first to download: a 404 before any file is kept
    with pytest.raises(Tau2DataError, match="HTTPError"):
        domain_folder("tiny")
    assert not (
        tmp_path / "cache"
    ).exists()  # the cache, tau2/, the commit's folder and tiny/: all made, all gone
    other = tmp_path / "cache" / "tau2" / "other"
    other.mkdir(parents=True)
    with pytest.raises(Tau2DataError, match="HTTPError"):
        domain_folder("tiny")
    assert [path.name for path in (tmp_path / "cache" / "tau2").iterdir()] == [
        "other"
    ]  # what was there stays


def test_a_download_that_fails_after_a_file_was_kept_keeps_it_and_its_folder(tiny, tmp_path):
    tiny.files.pop("tasks.json")  # the last to download
    with pytest.raises(Tau2DataError, match="HTTPError"):
        domain_folder("tiny")
    assert cached(tmp_path) == ["db.json", "policy.md"]  # whole and hashed: kept for the next attempt


def test_no_network_and_no_folder_names_both_ways_out(tiny, monkeypatch):
    monkeypatch.setenv(data.URL_ENV, "http://127.0.0.1:9/{commit}/{domain}/{file}")
    with pytest.raises(Tau2DataError) as raised:
        domain_folder("tiny")
    message = str(raised.value)
    assert "downloading http://127.0.0.1:9/" in message
    assert (
        "needs network access to raw.githubusercontent.com" in message and "$AGENT_ENV_TAU2_DATA" in message
    )


def test_a_corrupt_cached_file_is_downloaded_again(tiny, tmp_path, caplog):
    folder = domain_folder("tiny")
    (folder / "tasks.json").write_bytes(b"[{}]")
    data._checked_digest.cache_clear()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        domain_folder("tiny")
    assert (folder / "tasks.json").read_bytes() == CONTENT["tasks.json"]
    assert "does not match its SHA-256; downloading it again" in caplog.text


def test_a_named_folder_is_read_as_it_is_and_a_changed_file_is_warned_of(tiny, tmp_path, monkeypatch, caplog):
    own = tmp_path / "mine" / "tiny"
    own.mkdir(parents=True)
    for name, body in CONTENT.items():
        (own / name).write_bytes(body)
    (own / "tasks.json").write_bytes(b'[{"id": "mine"}]')
    monkeypatch.setenv(data.DATA_ENV, str(tmp_path / "mine"))
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert domain_folder("tiny") == own
    assert tiny.asked == []
    assert "tasks.json is not τ²-bench's tiny/tasks.json" in caplog.text and "not comparable" in caplog.text
    assert domain_folder("tiny", tmp_path / "mine") == own  # the argument names it too


def test_a_named_folder_missing_a_file_says_which_and_how_to_get_it(tiny, tmp_path):
    (tmp_path / "empty" / "tiny").mkdir(parents=True)
    with pytest.raises(Tau2DataError, match=r"tiny/db.json is not in .*empty.*give none to download"):
        domain_folder("tiny", tmp_path / "empty")


def test_an_unknown_domain_names_the_domains():
    with pytest.raises(LookupError, match="the domains are airline, retail, mock, telecom"):
        domain_folder("banking_knowledge")


LOCAL = local_tau2_data(Path(__file__).resolve().parents[4])


@pytest.mark.skipif(LOCAL is None, reason="no copy of τ²-bench's data beside the project")
def test_the_pinned_hashes_are_the_workspace_copys():
    assert LOCAL is not None
    for domain, files in data.FILES.items():
        for name, expected in files.items():
            assert digest((LOCAL / domain / name).read_bytes()) == expected, f"{domain}/{name}"
