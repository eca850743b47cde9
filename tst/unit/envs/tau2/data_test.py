"""`agent_env/envs/tau2/data.py`: τ²-bench's data comes at run time, downloaded at the pinned commit (here from a
local HTTP server with the same layout) and checked against its SHA-256, or read from a folder the user names; no
corrupt or partial file is ever left in the cache, and every failure names both ways out."""

from __future__ import annotations

import hashlib
import http.server
import logging
import threading
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
    """Serves `/<commit>/data/tau2/domains/<domain>/<file>` from `files`; `short` files are cut mid-body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.short: set[str] = set()
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
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
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
    with pytest.raises(Tau2DataError, match=r"stopped at|failed"):
        domain_folder("tiny")
    assert "db.json" not in cached(tmp_path) and not any(name.endswith(".part") for name in cached(tmp_path))


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
    with pytest.raises(LookupError, match="the domains are airline, retail, mock"):
        domain_folder("telecom")


LOCAL = local_tau2_data(Path(__file__).resolve().parents[4])


@pytest.mark.skipif(LOCAL is None, reason="no copy of τ²-bench's data beside the project")
def test_the_pinned_hashes_are_the_workspace_copys():
    assert LOCAL is not None
    for domain, files in data.FILES.items():
        for name, expected in files.items():
            assert digest((LOCAL / domain / name).read_bytes()) == expected, f"{domain}/{name}"
